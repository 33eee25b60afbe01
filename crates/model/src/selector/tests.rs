//! One case per row: parse → print, match, malformed input, LabelSelector
//! conversion both ways.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::json;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn label_selector(v: serde_json::Value) -> LabelSelector {
    serde_json::from_value(v).expect("a LabelSelector")
}

/// Input → the string kubectl prints for it.
#[test]
fn parse_then_print() {
    let cases = [
        ("", ""),
        ("app=web", "app=web"),
        ("app==web", "app=web"),
        ("app!=web", "app!=web"),
        (
            "  app = web ,  tier   in ( b , a ) ",
            "app=web,tier in (a,b)",
        ),
        ("tier in (b,a),app=web", "app=web,tier in (a,b)"),
        ("app notin (x)", "app notin (x)"),
        ("gpu", "gpu"),
        ("!gpu", "!gpu"),
        ("! gpu", "!gpu"),
        ("app=", "app="),
        ("a in ()", "a in ()"),
        ("a in (x,)", "a in (,x)"),
        ("example.com/role=decode", "example.com/role=decode"),
        ("app=web,app=db", "app=web,app=db"),
        ("app in(web)", "app in (web)"),
    ];
    for (input, printed) in cases {
        let parsed = Selector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(parsed.to_string(), printed, "{input:?}");
        assert_eq!(Selector::parse(printed), Ok(parsed), "{input:?} reparsed");
    }
}

/// Malformed input → the error message (never a panic).
#[test]
fn malformed_input() {
    let cases = [
        (
            "a b",
            "found 'b', expected: '=', '==', '!=', 'in' or 'notin'",
        ),
        ("app in web", "found 'web', expected: '('"),
        ("app in (web", "found end of string, expected: ',' or ')'"),
        ("app in (a b)", "found 'b', expected: ',' or ')'"),
        (
            "app in (=)",
            "found '=', expected: ',', ')' or an identifier",
        ),
        (
            "a=b,",
            "found end of string, expected: identifier after ','",
        ),
        (",a=b", "found ',', expected: '!' or an identifier"),
        ("a=b=c", "found '=', expected: ',' or end of string"),
        (
            "a>1",
            "found '>', expected: '=', '==', '!=', 'in' or 'notin'",
        ),
        (
            "a<1",
            "found '<', expected: '=', '==', '!=', 'in' or 'notin'",
        ),
        ("!", "found end of string, expected: '!' or an identifier"),
        ("!a=b", "found '=', expected: ',' or end of string"),
        ("a=(", "found '(', expected: an identifier"),
        (")", "found ')', expected: '!' or an identifier"),
        (
            "-a=b",
            "invalid label key \"-a\": must be 63 characters or less, of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
        ),
        (
            "Bad_Prefix/a=b",
            "invalid label key \"Bad_Prefix/a\": the prefix before '/' must be a DNS subdomain (lowercase alphanumerics, '-' and '.')",
        ),
        (
            "a=b/c",
            "invalid label value \"b/c\" for key \"a\": must be 63 characters or less, of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
        ),
        (
            "a in (ok,-no)",
            "invalid label value \"-no\" for key \"a\": must be 63 characters or less, of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
        ),
    ];
    for (input, message) in cases {
        let err = Selector::parse(input).expect_err(input);
        assert_eq!(err.to_string(), message, "{input:?}");
    }
    let long = format!("a={}", "v".repeat(64));
    assert!(matches!(
        Selector::parse(&long),
        Err(SelectorError::Value { .. })
    ));
}

/// No input panics: every prefix of every case, and odd characters.
#[test]
fn no_panic_on_any_prefix() {
    let inputs = [
        "app in (web, db),!canary,tier!=x,zone==a,gpu",
        "é=ü,(),,!!,==,!=,in,notin ( , ) \t\n",
        "a in ((b)),a notin ))",
    ];
    for input in inputs {
        for (i, _) in input.char_indices() {
            let _ = Selector::parse(&input[..i]);
        }
    }
}

/// Selector × labels → does it match.
#[test]
fn matches_labels() {
    let web = labels(&[("app", "web"), ("tier", "a")]);
    let cases = [
        ("", true),
        ("app=web", true),
        ("app==web", true),
        ("app=db", false),
        ("app!=web", false),
        ("app!=db", true),
        ("missing!=x", true),
        ("app in (web, db)", true),
        ("app in (db)", false),
        ("app notin (web)", false),
        ("missing notin (x)", true),
        ("tier", true),
        ("missing", false),
        ("!tier", false),
        ("!missing", true),
        ("app=web,tier in (b,c)", false),
        ("app=web,tier in (a,c)", true),
        ("app=", false),
    ];
    for (input, want) in cases {
        let sel = Selector::parse(input).expect(input);
        assert_eq!(sel.matches(&web), want, "{input:?}");
        let via_api = sel.to_label_selector();
        assert_eq!(
            label_selector_matches(&via_api, &web),
            want,
            "{input:?} as {via_api:?}"
        );
    }
    assert!(
        Selector::parse("app=")
            .unwrap()
            .matches(&labels(&[("app", "")]))
    );
}

/// LabelSelector (JSON) → the string kubectl prints (`-o wide`).
#[test]
fn formats_label_selectors() {
    let cases = [
        (json!({}), "<none>"),
        (json!({"matchLabels": {}}), "<none>"),
        (json!({"matchLabels": {"b": "2", "a": "1"}}), "a=1,b=2"),
        (
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "gpu", "operator": "Exists"},
                {"key": "zone", "operator": "NotIn", "values": ["x"]}]}),
            "app=web,!canary,gpu,tier in (a,b),zone notin (x)",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            "<error>",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            "<error>",
        ),
    ];
    for (sel, printed) in cases {
        let sel = label_selector(sel);
        assert_eq!(format_label_selector(Some(&sel)), printed, "{sel:?}");
    }
    assert_eq!(format_label_selector(None), "<none>");
}

/// String → LabelSelector (JSON) → the same string.
#[test]
fn converts_both_ways() {
    let cases = [
        ("", json!({})),
        ("app=web", json!({"matchLabels": {"app": "web"}})),
        (
            "app=web,tier in (a,b)",
            json!({"matchLabels": {"app": "web"},
                   "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}),
        ),
        (
            "app!=web",
            json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}),
        ),
        (
            "!canary,gpu",
            json!({"matchExpressions": [{"key": "canary", "operator": "DoesNotExist"},
                                         {"key": "gpu", "operator": "Exists"}]}),
        ),
        (
            "app=db,app=web",
            json!({"matchLabels": {"app": "db"},
                   "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}),
        ),
    ];
    for (input, want) in cases {
        let api = Selector::parse(input).expect(input).to_label_selector();
        assert_eq!(serde_json::to_value(&api).unwrap(), want, "{input:?}");
        let back = Selector::from_label_selector(&api).expect(input);
        let reparsed = Selector::parse(&back.to_string()).expect(input);
        assert_eq!(reparsed.to_label_selector(), api, "{input:?} back");
    }
}

/// LabelSelectors the API server refuses → the error.
#[test]
fn refuses_bad_label_selectors() {
    let cases = [
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
            "key \"a\": unknown operator \"Gt\" (a label selector takes In, NotIn, Exists or DoesNotExist)",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]}),
            "key \"a\": values must be given when the operator is In or NotIn",
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            "key \"a\": values must be empty when the operator is Exists or DoesNotExist",
        ),
        (
            json!({"matchLabels": {"a b": "x"}}),
            "invalid label key \"a b\": must be 63 characters or less, of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric",
        ),
    ];
    for (sel, message) in cases {
        let sel = label_selector(sel);
        let err = Selector::from_label_selector(&sel).expect_err("refused");
        assert_eq!(err.to_string(), message, "{sel:?}");
    }
}

/// LabelSelector × labels, tolerant of what conversion refuses (an
/// unknown operator matches nothing; `In` of nothing matches nothing).
#[test]
fn matches_label_selectors_directly() {
    let web = labels(&[("app", "web")]);
    let cases = [
        (json!({}), true),
        (json!({"matchLabels": {"app": "web"}}), true),
        (json!({"matchLabels": {"app": "db"}}), false),
        (
            json!({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}),
            false,
        ),
        (
            json!({"matchExpressions": [{"key": "app", "operator": "In"}]}),
            false,
        ),
        (
            json!({"matchExpressions": [{"key": "app", "operator": "NotIn"}]}),
            true,
        ),
    ];
    for (sel, want) in cases {
        let sel = label_selector(sel);
        assert_eq!(label_selector_matches(&sel, &web), want, "{sel:?}");
    }
    assert!(label_selector_is_empty(&label_selector(
        json!({"matchLabels": {}, "matchExpressions": []})
    )));
    assert!(!label_selector_is_empty(&label_selector(
        json!({"matchLabels": {"a": "b"}})
    )));
}

#[test]
fn equality_pairs_only_for_equalities() {
    let cases = [
        ("a=1,b=2", Some(labels(&[("a", "1"), ("b", "2")]))),
        ("", Some(BTreeMap::new())),
        ("a=1,b!=2", None),
        ("a in (1)", None),
        ("a", None),
        ("a=1,a=2", None),
        ("a=1,a=1", Some(labels(&[("a", "1")]))),
    ];
    for (input, want) in cases {
        assert_eq!(
            Selector::parse(input).unwrap().equality_pairs(),
            want,
            "{input:?}"
        );
    }
    let map = labels(&[("b", "2"), ("a", "1")]);
    assert_eq!(Selector::from_labels(&map).to_string(), "a=1,b=2");
}

/// A workload's selector: expressions honoured, a null, empty or
/// unconvertible one refused (never "every pod").
#[test]
fn workload_selectors_refuse_what_would_select_everything() {
    let web = labels(&[("app", "web")]);
    let db = labels(&[("app", "db")]);
    let exprs = label_selector(
        json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}),
    );
    let s = Selector::of_workload(Some(&exprs)).unwrap();
    assert_eq!(s.to_string(), "app in (web)");
    assert!(s.matches(&web));
    assert!(!s.matches(&db));
    assert!(!s.matches(&BTreeMap::new()));
    assert!(s.matches_labels(Some(&web)));
    assert!(!s.matches_labels(None));
    assert_eq!(Selector::of_workload(None), Err(SelectorError::Empty));
    for empty in [
        json!({}),
        json!({"matchLabels": {}, "matchExpressions": []}),
    ] {
        let empty = label_selector(empty);
        assert_eq!(
            Selector::of_workload(Some(&empty)),
            Err(SelectorError::Empty)
        );
    }
    let bad = label_selector(
        json!({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}),
    );
    assert!(matches!(
        Selector::of_workload(Some(&bad)),
        Err(SelectorError::Operator { .. })
    ));
}
