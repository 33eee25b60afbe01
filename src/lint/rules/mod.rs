//! Lint rules: one file a rule, docs in the rule's doc comment.
