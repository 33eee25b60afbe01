//! Files, directories and stdin → YAML/JSON documents with source spans →
//! typed views of the kinds infera analyses.
