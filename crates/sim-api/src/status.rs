//! `Status` error responses, worded as kube-apiserver words them.

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};

use infera_sim_core::kind::Kind;
use infera_sim_store::StoreError;

/// An API error: becomes a `Status` object with `reason` and `code`.
#[derive(Debug, Clone)]
pub struct ApiStatus {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    pub retry_after: Option<u64>,
}

/// `deployments.apps`, or `pods` for the core group: how upstream names a
/// resource in messages.
pub fn qualified(kind: Kind) -> String {
    if kind.group().is_empty() {
        kind.plural().to_string()
    } else {
        format!("{}.{}", kind.plural(), kind.group())
    }
}

fn details(kind: Kind, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": kind.plural()});
    if !kind.group().is_empty() {
        d["group"] = json!(kind.group());
    }
    d
}

impl ApiStatus {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiStatus {
        ApiStatus {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    pub fn not_found(kind: Kind, name: &str) -> ApiStatus {
        ApiStatus {
            details: Some(details(kind, name)),
            ..ApiStatus::new(
                404,
                "NotFound",
                format!("{} \"{name}\" not found", qualified(kind)),
            )
        }
    }

    pub fn already_exists(kind: Kind, name: &str) -> ApiStatus {
        ApiStatus {
            details: Some(details(kind, name)),
            ..ApiStatus::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", qualified(kind)),
            )
        }
    }

    pub fn conflict(kind: Kind, name: &str) -> ApiStatus {
        ApiStatus {
            details: Some(details(kind, name)),
            ..ApiStatus::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                    qualified(kind)
                ),
            )
        }
    }

    pub fn invalid(kind: Kind, name: &str, why: &str) -> ApiStatus {
        let kind_name = if kind.group().is_empty() {
            kind.kind().to_string()
        } else {
            format!("{}.{}", kind.kind(), kind.group())
        };
        ApiStatus {
            details: Some(details(kind, name)),
            ..ApiStatus::new(
                422,
                "Invalid",
                format!("{kind_name} \"{name}\" is invalid: {why}"),
            )
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiStatus {
        ApiStatus::new(400, "BadRequest", message)
    }

    pub fn gone(message: impl Into<String>) -> ApiStatus {
        ApiStatus::new(410, "Expired", message)
    }

    pub fn unauthorized() -> ApiStatus {
        ApiStatus::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn method_not_allowed(verb: &str, what: &str) -> ApiStatus {
        ApiStatus::new(
            405,
            "MethodNotAllowed",
            format!(
                "the server does not allow this method on the requested resource ({verb} {what})"
            ),
        )
    }

    pub fn unsupported_media_type(ct: &str) -> ApiStatus {
        ApiStatus::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {ct:?})"
            ),
        )
    }

    pub fn path_not_found() -> ApiStatus {
        ApiStatus::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub fn from_store(err: &StoreError, kind: Kind, name: &str) -> ApiStatus {
        match err {
            StoreError::NotFound => ApiStatus::not_found(kind, name),
            StoreError::AlreadyExists => ApiStatus::already_exists(kind, name),
            StoreError::Conflict => ApiStatus::conflict(kind, name),
            StoreError::Invalid(why) => ApiStatus::invalid(kind, name, why),
            StoreError::Gone => ApiStatus::gone("too old resource version"),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        if let Some(secs) = self.retry_after {
            let d = v
                .as_object_mut()
                .map(|m| m.entry("details").or_insert_with(|| json!({})));
            if let Some(d) = d {
                d["retryAfterSeconds"] = json!(secs);
            }
        }
        v
    }

    pub fn into_response(self) -> Response<Body> {
        let body = serde_json::to_vec(&self.to_json()).unwrap_or_default();
        let mut resp = Response::new(Body::from(body));
        *resp.status_mut() =
            StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        if self.code == 401 {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"infera-sim\""),
            );
        }
        resp
    }
}
