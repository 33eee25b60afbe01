//! Label selectors, one home: the string syntax kubectl and the API server
//! take (`app=web,tier in (a,b),!canary`), matching against a label map,
//! the string kubectl prints, and conversion both ways with k8s-openapi's
//! [`LabelSelector`] (`matchLabels` + `matchExpressions`).
//!
//! The grammar and the printed form follow apimachinery's `labels.Parse`
//! and `Selector.String()`: requirements sorted by key, set values sorted.
//! `Gt`/`Lt` belong to node affinity (`NodeSelectorRequirement`, see
//! [`crate::scheduling`]), not to label selectors, and are refused here.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// What a requirement asks of one label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operator {
    /// `key=value` (also `key==value`; `matchLabels` in a [`LabelSelector`]).
    Equals,
    /// `key!=value`: the label is absent or differs.
    NotEquals,
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)`: the label is absent or not one of them.
    NotIn,
    /// `key`: the label is present.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
}

impl Operator {
    /// The `matchExpressions` operator name (`Equals` is `In` of one value,
    /// `NotEquals` `NotIn` of one).
    pub fn expression_name(self) -> &'static str {
        match self {
            Operator::Equals | Operator::In => "In",
            Operator::NotEquals | Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
        }
    }

    /// Does a label `value` satisfy this operator, `listed` saying whether
    /// a value is among the requirement's?
    fn holds(self, value: Option<&str>, listed: impl Fn(&str) -> bool) -> bool {
        match self {
            Operator::Equals | Operator::In => value.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !listed(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }

    fn from_expression_name(name: &str) -> Option<Operator> {
        match name {
            "In" => Some(Operator::In),
            "NotIn" => Some(Operator::NotIn),
            "Exists" => Some(Operator::Exists),
            "DoesNotExist" => Some(Operator::DoesNotExist),
            _ => None,
        }
    }
}

/// One requirement on one label key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: Operator,
    /// One value for `Equals`/`NotEquals`, one or more for `In`/`NotIn`,
    /// none for `Exists`/`DoesNotExist`.
    pub values: BTreeSet<String>,
}

impl Requirement {
    /// Does the label `get(key)` returns satisfy this requirement?
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        self.operator.holds(value, |v| self.values.contains(v))
    }

    fn values_joined(&self) -> String {
        self.values.iter().cloned().collect::<Vec<_>>().join(",")
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = &self.key;
        match self.operator {
            Operator::Equals => write!(f, "{k}={}", self.values_joined()),
            Operator::NotEquals => write!(f, "{k}!={}", self.values_joined()),
            Operator::In => write!(f, "{k} in ({})", self.values_joined()),
            Operator::NotIn => write!(f, "{k} notin ({})", self.values_joined()),
            Operator::Exists => write!(f, "{k}"),
            Operator::DoesNotExist => write!(f, "!{k}"),
        }
    }
}

/// Why a selector string or a [`LabelSelector`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The string does not follow the grammar.
    #[error("found {found}, expected: {expected}")]
    Syntax {
        found: String,
        expected: &'static str,
    },
    /// A key that is not a qualified name (`[prefix/]name`).
    #[error("invalid label key {key:?}: {why}")]
    Key { key: String, why: &'static str },
    /// A value that is not a label value.
    #[error("invalid label value {value:?} for key {key:?}: {why}")]
    Value {
        key: String,
        value: String,
        why: &'static str,
    },
    /// A `matchExpressions` operator other than In, NotIn, Exists, DoesNotExist.
    #[error(
        "key {key:?}: unknown operator {operator:?} (a label selector takes In, NotIn, Exists or DoesNotExist)"
    )]
    Operator { key: String, operator: String },
    /// `In`/`NotIn` without values, or `Exists`/`DoesNotExist` with some.
    #[error("key {key:?}: {why}")]
    Values { key: String, why: &'static str },
    /// A workload's selector that is null or empty (it would select every
    /// pod of the namespace; the API server refuses it on a Deployment).
    #[error("the selector is empty, so it would select every pod")]
    Empty,
}

/// A label selector: every requirement must hold. The empty selector
/// matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// Parse the string syntax (`a=b`, `a==b`, `a!=b`, `a in (x,y)`,
    /// `a notin (x)`, `a`, `!a`, comma-separated). The empty string is the
    /// empty selector.
    pub fn parse(s: &str) -> Result<Selector, SelectorError> {
        let requirements = parse::requirements(s)?;
        for r in &requirements {
            validate(r)?;
        }
        Ok(Selector::sorted(requirements))
    }

    /// The equality selector of a map (`labels.SelectorFromSet`).
    pub fn from_labels(labels: &BTreeMap<String, String>) -> Selector {
        let requirements = labels
            .iter()
            .map(|(k, v)| Requirement {
                key: k.clone(),
                operator: Operator::Equals,
                values: BTreeSet::from([v.clone()]),
            })
            .collect();
        Selector { requirements }
    }

    /// A [`LabelSelector`]'s requirements, checked as the API server checks
    /// them (`metav1.LabelSelectorAsSelector`).
    pub fn from_label_selector(sel: &LabelSelector) -> Result<Selector, SelectorError> {
        let mut selector = Selector::from_labels(&sel.match_labels.clone().unwrap_or_default());
        for e in sel.match_expressions.iter().flatten() {
            let r = expression(e).ok_or_else(|| SelectorError::Operator {
                key: e.key.clone(),
                operator: e.operator.clone(),
            })?;
            check_value_count(&r)?;
            selector.requirements.push(r);
        }
        for r in &selector.requirements {
            validate(r)?;
        }
        Ok(Selector::sorted(selector.requirements))
    }

    /// The selector of a workload's own pods (a Deployment's, StatefulSet's
    /// `spec.selector`): as [`Selector::from_label_selector`], and a null or
    /// empty one is refused rather than read as "every pod".
    pub fn of_workload(sel: Option<&LabelSelector>) -> Result<Selector, SelectorError> {
        let selector = Selector::from_label_selector(sel.ok_or(SelectorError::Empty)?)?;
        if selector.is_empty() {
            return Err(SelectorError::Empty);
        }
        Ok(selector)
    }

    /// The [`LabelSelector`] of this selector: `Equals` become `matchLabels`
    /// (a second value for one key an `In` expression), `NotEquals` a
    /// `NotIn` of one value, the rest expressions in key order.
    pub fn to_label_selector(&self) -> LabelSelector {
        let mut labels = BTreeMap::new();
        let mut expressions = Vec::new();
        for r in &self.requirements {
            let single = r.values.first().filter(|_| r.values.len() == 1);
            if let (Operator::Equals, Some(v)) = (r.operator, single)
                && !labels.contains_key(&r.key)
            {
                labels.insert(r.key.clone(), v.clone());
                continue;
            }
            let values = (!r.values.is_empty()).then(|| r.values.iter().cloned().collect());
            expressions.push(LabelSelectorRequirement {
                key: r.key.clone(),
                operator: r.operator.expression_name().to_string(),
                values,
            });
        }
        LabelSelector {
            match_labels: (!labels.is_empty()).then_some(labels),
            match_expressions: (!expressions.is_empty()).then_some(expressions),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The `key=value` pairs when every requirement is an equality (for
    /// callers that match on a map), else `None`.
    pub fn equality_pairs(&self) -> Option<BTreeMap<String, String>> {
        let mut pairs = BTreeMap::new();
        for r in &self.requirements {
            let value = r.values.first().filter(|_| r.values.len() == 1);
            let (Operator::Equals, Some(v)) = (r.operator, value) else {
                return None;
            };
            // `a=1,a=2` matches nothing, which no map says.
            if pairs
                .insert(r.key.clone(), v.clone())
                .is_some_and(|old| old != *v)
            {
                return None;
            }
        }
        Some(pairs)
    }

    /// Do these labels satisfy every requirement?
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// As [`Selector::matches`], for an object's `metadata.labels`
    /// (absent: no labels).
    pub fn matches_labels(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.matches_with(|k| labels.and_then(|l| l.get(k)).map(String::as_str))
    }

    /// As [`Selector::matches`], with the labels read through `get` (for
    /// labels held as JSON, or absent).
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches_value(get(&r.key)))
    }

    /// Requirements are kept by key, stable (as upstream's `Add` sorts
    /// them), so printing and equality do not depend on the input's order.
    fn sorted(mut requirements: Vec<Requirement>) -> Selector {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Selector { requirements }
    }
}

/// A selector of these requirements (taken as given, not validated).
impl FromIterator<Requirement> for Selector {
    fn from_iter<I: IntoIterator<Item = Requirement>>(requirements: I) -> Selector {
        Selector::sorted(requirements.into_iter().collect())
    }
}

impl FromStr for Selector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Selector, SelectorError> {
        Selector::parse(s)
    }
}

/// The string kubectl prints (`app=web,tier in (a,b)`); empty for the
/// empty selector.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Does a [`LabelSelector`] match these labels? Upstream semantics: an
/// empty selector matches everything; an expression with an unknown
/// operator matches nothing. (A *null* selector is the caller's business:
/// a Deployment requires one, an affinity term's matches no pod.)
pub fn label_selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    label_selector_matches_with(selector, |k| labels.get(k).map(String::as_str))
}

/// As [`label_selector_matches`], with the labels read through `get`.
pub fn label_selector_matches_with<'a>(
    selector: &LabelSelector,
    get: impl Fn(&str) -> Option<&'a str>,
) -> bool {
    let labels_ok = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| get(k) == Some(v.as_str()));
    labels_ok
        && selector
            .match_expressions
            .iter()
            .flatten()
            .all(|e| expression_matches(&e.operator, e.values.as_deref(), get(&e.key)))
}

/// One expression (of a label selector, or a node selector's In, NotIn,
/// Exists, DoesNotExist) against a label's value; any other operator
/// matches nothing.
pub fn expression_matches(operator: &str, values: Option<&[String]>, value: Option<&str>) -> bool {
    let values = values.unwrap_or_default();
    Operator::from_expression_name(operator)
        .is_some_and(|op| op.holds(value, |v| values.iter().any(|listed| listed == v)))
}

/// A selector with neither `matchLabels` nor `matchExpressions` entries
/// (it matches everything).
pub fn label_selector_is_empty(selector: &LabelSelector) -> bool {
    selector
        .match_labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// A selector as `kubectl get -o wide` prints it (`metav1.FormatLabelSelector`):
/// `<none>` when null or empty, `<error>` when it does not convert.
pub fn format_label_selector(selector: Option<&LabelSelector>) -> String {
    match selector.map(Selector::from_label_selector) {
        None => "<none>".to_string(),
        Some(Err(_)) => "<error>".to_string(),
        Some(Ok(s)) if s.is_empty() => "<none>".to_string(),
        Some(Ok(s)) => s.to_string(),
    }
}

/// One `matchExpressions` entry as a requirement; `None` for an unknown operator.
fn expression(e: &LabelSelectorRequirement) -> Option<Requirement> {
    Some(Requirement {
        key: e.key.clone(),
        operator: Operator::from_expression_name(&e.operator)?,
        values: e.values.iter().flatten().cloned().collect(),
    })
}

fn check_value_count(r: &Requirement) -> Result<(), SelectorError> {
    let why = match r.operator {
        Operator::In | Operator::NotIn if r.values.is_empty() => {
            "values must be given when the operator is In or NotIn"
        }
        Operator::Exists | Operator::DoesNotExist if !r.values.is_empty() => {
            "values must be empty when the operator is Exists or DoesNotExist"
        }
        _ => return Ok(()),
    };
    Err(SelectorError::Values {
        key: r.key.clone(),
        why,
    })
}

fn validate(r: &Requirement) -> Result<(), SelectorError> {
    if let Err(why) = names::key(&r.key) {
        return Err(SelectorError::Key {
            key: r.key.clone(),
            why,
        });
    }
    match r
        .values
        .iter()
        .find_map(|v| names::value(v).err().map(|why| (v, why)))
    {
        Some((value, why)) => Err(SelectorError::Value {
            key: r.key.clone(),
            value: value.clone(),
            why,
        }),
        None => Ok(()),
    }
}

/// Label key and value syntax (apimachinery's `IsQualifiedName` and
/// `IsValidLabelValue`).
mod names {
    const NAME: &str = "must be 63 characters or less, of alphanumerics, '-', '_' or '.', \
                        starting and ending with an alphanumeric";

    fn is_name(s: &str) -> bool {
        let inner = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
        s.len() <= 63
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.ends_with(|c: char| c.is_ascii_alphanumeric())
            && s.chars().all(inner)
    }

    fn is_dns_subdomain(s: &str) -> bool {
        s.len() <= 253
            && s.split('.').all(|part| {
                part.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && part.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    }

    pub fn key(k: &str) -> Result<(), &'static str> {
        let (prefix, name) = match k.split_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, k),
        };
        if prefix.is_some_and(|p| !is_dns_subdomain(p)) {
            return Err(
                "the prefix before '/' must be a DNS subdomain (lowercase alphanumerics, '-' and '.')",
            );
        }
        if !is_name(name) {
            return Err(NAME);
        }
        Ok(())
    }

    pub fn value(v: &str) -> Result<(), &'static str> {
        if v.is_empty() || is_name(v) {
            Ok(())
        } else {
            Err(NAME)
        }
    }
}

/// The grammar, as apimachinery's lexer and parser read it.
mod parse {
    use std::collections::BTreeSet;

    use super::{Operator, Requirement, SelectorError};

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Token {
        Ident(String),
        Bang,
        Equals,
        DoubleEquals,
        NotEquals,
        Gt,
        Lt,
        Open,
        Close,
        Comma,
        End,
    }

    impl Token {
        fn shown(&self) -> String {
            let s = match self {
                Token::Ident(s) => s.as_str(),
                Token::Bang => "!",
                Token::Equals => "=",
                Token::DoubleEquals => "==",
                Token::NotEquals => "!=",
                Token::Gt => ">",
                Token::Lt => "<",
                Token::Open => "(",
                Token::Close => ")",
                Token::Comma => ",",
                Token::End => return "end of string".to_string(),
            };
            format!("'{s}'")
        }
    }

    fn special(c: char) -> bool {
        matches!(c, '!' | '=' | '<' | '>' | '(' | ')' | ',')
    }

    fn lex(s: &str) -> Vec<Token> {
        let mut tokens = Vec::new();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            let token = match c {
                c if c.is_whitespace() => continue,
                '!' if chars.next_if_eq(&'=').is_some() => Token::NotEquals,
                '!' => Token::Bang,
                '=' if chars.next_if_eq(&'=').is_some() => Token::DoubleEquals,
                '=' => Token::Equals,
                '>' => Token::Gt,
                '<' => Token::Lt,
                '(' => Token::Open,
                ')' => Token::Close,
                ',' => Token::Comma,
                c => {
                    let mut ident = String::from(c);
                    while let Some(c) = chars.next_if(|c| !c.is_whitespace() && !special(*c)) {
                        ident.push(c);
                    }
                    Token::Ident(ident)
                }
            };
            tokens.push(token);
        }
        tokens.push(Token::End);
        tokens
    }

    struct Parser {
        tokens: Vec<Token>,
        at: usize,
    }

    fn syntax(found: &Token, expected: &'static str) -> SelectorError {
        SelectorError::Syntax {
            found: found.shown(),
            expected,
        }
    }

    pub fn requirements(s: &str) -> Result<Vec<Requirement>, SelectorError> {
        let mut p = Parser {
            tokens: lex(s),
            at: 0,
        };
        let mut out = Vec::new();
        if p.peek() == &Token::End {
            return Ok(out);
        }
        loop {
            out.push(p.requirement()?);
            match p.next() {
                Token::End => return Ok(out),
                Token::Comma if matches!(p.peek(), Token::Ident(_) | Token::Bang) => {}
                Token::Comma => return Err(syntax(p.peek(), "identifier after ','")),
                other => return Err(syntax(&other, "',' or end of string")),
            }
        }
    }

    impl Parser {
        fn peek(&self) -> &Token {
            self.tokens.get(self.at).unwrap_or(&Token::End)
        }

        fn next(&mut self) -> Token {
            let t = self.peek().clone();
            self.at += 1;
            t
        }

        fn key(&mut self) -> Result<String, SelectorError> {
            match self.next() {
                Token::Ident(k) => Ok(k),
                other => Err(syntax(&other, "'!' or an identifier")),
            }
        }

        fn requirement(&mut self) -> Result<Requirement, SelectorError> {
            let bang = self.peek() == &Token::Bang;
            if bang {
                self.at += 1;
            }
            let key = self.key()?;
            let req = |operator, values| Requirement {
                key: key.clone(),
                operator,
                values,
            };
            if bang {
                return Ok(req(Operator::DoesNotExist, BTreeSet::new()));
            }
            let operator = match self.peek() {
                Token::Comma | Token::End => return Ok(req(Operator::Exists, BTreeSet::new())),
                Token::Equals | Token::DoubleEquals => Operator::Equals,
                Token::NotEquals => Operator::NotEquals,
                Token::Ident(op) if op == "in" => Operator::In,
                Token::Ident(op) if op == "notin" => Operator::NotIn,
                other => return Err(syntax(other, "'=', '==', '!=', 'in' or 'notin'")),
            };
            self.at += 1;
            let values = match operator {
                Operator::In | Operator::NotIn => self.set()?,
                _ => BTreeSet::from([self.exact_value()?]),
            };
            Ok(req(operator, values))
        }

        /// The value after `=`, `==` or `!=` (empty before `,` or the end).
        fn exact_value(&mut self) -> Result<String, SelectorError> {
            match self.peek().clone() {
                Token::Comma | Token::End => Ok(String::new()),
                Token::Ident(v) => {
                    self.at += 1;
                    Ok(v)
                }
                other => Err(syntax(&other, "an identifier")),
            }
        }

        /// `(a,b)`; empty slots (`()`, `(a,)`) are the empty value, as upstream.
        fn set(&mut self) -> Result<BTreeSet<String>, SelectorError> {
            match self.next() {
                Token::Open => {}
                other => return Err(syntax(&other, "'('")),
            }
            let mut values = BTreeSet::new();
            let mut slot_open = true;
            loop {
                match self.next() {
                    Token::Ident(v) if slot_open => {
                        values.insert(v);
                        slot_open = false;
                    }
                    Token::Comma => {
                        if slot_open {
                            values.insert(String::new());
                        }
                        slot_open = true;
                    }
                    Token::Close => {
                        if slot_open {
                            values.insert(String::new());
                        }
                        return Ok(values);
                    }
                    other if slot_open => return Err(syntax(&other, "',', ')' or an identifier")),
                    other => return Err(syntax(&other, "',' or ')'")),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
