//! Server-sent events as an OpenAI-compatible stream sends them: events
//! separated by a blank line, each `data: …` line a JSON chunk or the
//! closing `[DONE]`. Fed bytes as they arrive; reports what the stream
//! has shown so far.

use serde_json::Value;

/// What a stream has shown so far.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Seen {
    /// A chunk carried a token (non-empty `delta.content` or `text`).
    pub token: bool,
    /// A chunk carried a `finish_reason`.
    pub finished: bool,
    /// `data: [DONE]` arrived after the `finish_reason`.
    pub done: bool,
    /// The message of an error event.
    pub error: Option<String>,
}

/// An incremental parser: [`Parser::feed`] bytes, read [`Parser::seen`].
#[derive(Debug, Default)]
pub struct Parser {
    buf: Vec<u8>,
    seen: Seen,
}

/// The most a single event may hold before the stream counts as garbage.
const MAX_EVENT: usize = 1 << 20;

impl Parser {
    /// Feed the next bytes; `true` when the first token arrived in them.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        let had_token = self.seen.token;
        self.buf.extend_from_slice(bytes);
        while let Some(end) = event_end(&self.buf) {
            let event: Vec<u8> = self.buf.drain(..end.1).take(end.0).collect();
            self.event(&String::from_utf8_lossy(&event));
        }
        if self.buf.len() > MAX_EVENT {
            self.buf.clear();
            self.seen
                .error
                .get_or_insert_with(|| "an event over 1 MiB".into());
        }
        !had_token && self.seen.token
    }

    pub fn seen(&self) -> &Seen {
        &self.seen
    }

    fn event(&mut self, event: &str) {
        for line in event.lines() {
            let Some(data) = line.strip_prefix("data:") else {
                continue;
            };
            let data = data.trim();
            if data == "[DONE]" {
                self.seen.done = self.seen.finished;
                continue;
            }
            match serde_json::from_str::<Value>(data) {
                Ok(chunk) => self.chunk(&chunk),
                Err(_) => {
                    self.seen
                        .error
                        .get_or_insert_with(|| "an event that is not JSON".into());
                }
            }
        }
    }

    fn chunk(&mut self, chunk: &Value) {
        if let Some(error) = chunk.get("error") {
            self.seen.error.get_or_insert_with(|| error_message(error));
            return;
        }
        let choice = chunk.pointer("/choices/0");
        let text = choice
            .and_then(|c| c.pointer("/delta/content").or_else(|| c.get("text")))
            .and_then(Value::as_str);
        if text.is_some_and(|t| !t.is_empty()) {
            self.seen.token = true;
        }
        if choice
            .and_then(|c| c.get("finish_reason"))
            .is_some_and(|f| !f.is_null())
        {
            self.seen.finished = true;
        }
    }
}

/// The end of the first complete event: (its length, the length with its
/// separator). Separators: `\n\n`, `\r\n\r\n`.
fn event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| (i, i + 2));
    let crlf = (buf.windows(4))
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, i + 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// An OpenAI error object's message, at most 200 characters.
pub fn error_message(error: &Value) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| error.to_string(), str::to_string);
    message.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNK: &str = r#"data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#;
    const LAST: &str = r#"data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;

    fn parse(parts: &[&str]) -> Seen {
        let mut p = Parser::default();
        for part in parts {
            p.feed(part.as_bytes());
        }
        p.seen().clone()
    }

    #[test]
    fn streams_are_judged_by_what_they_showed() {
        let whole = format!("{CHUNK}\n\n{LAST}\n\ndata: [DONE]\n\n");
        let cases: Vec<(&str, Vec<String>, Seen)> = vec![
            (
                "complete",
                vec![whole.clone()],
                Seen {
                    token: true,
                    finished: true,
                    done: true,
                    error: None,
                },
            ),
            (
                "split anywhere",
                whole
                    .as_bytes()
                    .chunks(7)
                    .map(|c| String::from_utf8_lossy(c).into())
                    .collect(),
                Seen {
                    token: true,
                    finished: true,
                    done: true,
                    error: None,
                },
            ),
            (
                "CRLF separators",
                vec![whole.replace("\n\n", "\r\n\r\n")],
                Seen {
                    token: true,
                    finished: true,
                    done: true,
                    error: None,
                },
            ),
            (
                "cut before the finish",
                vec![format!("{CHUNK}\n\n")],
                Seen {
                    token: true,
                    finished: false,
                    done: false,
                    error: None,
                },
            ),
            (
                "[DONE] without a finish_reason is not done",
                vec![format!("{CHUNK}\n\ndata: [DONE]\n\n")],
                Seen {
                    token: true,
                    finished: false,
                    done: false,
                    error: None,
                },
            ),
            (
                "an error event inside the 200",
                vec![format!(
                    "{CHUNK}\n\ndata: {{\"error\": {{\"message\": \"worker gone\", \"code\": 502}}}}\n\ndata: [DONE]\n\n"
                )],
                Seen {
                    token: true,
                    finished: false,
                    done: false,
                    error: Some("worker gone".into()),
                },
            ),
            (
                "garbage",
                vec!["data: {nope\n\n".into()],
                Seen {
                    token: false,
                    finished: false,
                    done: false,
                    error: Some("an event that is not JSON".into()),
                },
            ),
        ];
        for (name, parts, want) in cases {
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            assert_eq!(parse(&parts), want, "{name}");
        }
    }

    #[test]
    fn the_first_token_is_reported_once() {
        let mut p = Parser::default();
        assert!(!p.feed(
            b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
        ));
        assert!(p.feed(format!("{CHUNK}\n\n").as_bytes()));
        assert!(!p.feed(format!("{CHUNK}\n\n").as_bytes()));
    }
}
