//! Printers over one list of findings: human, JSON, SARIF, GitHub.
