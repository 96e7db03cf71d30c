//! What a rules or baseline file may be before it is parsed: a regular file of bounded size,
//! without YAML anchors and aliases (our files never use them, and 40,000 aliases to one large
//! entry expand to gigabytes), and without deep nesting. A usage error names the line.

use crate::wire::read::{Refusal, read_regular_text};
use std::path::Path;

/// The largest rules or baseline file read, bytes.
pub const MAX_BYTES: u64 = 16 << 20;
/// Deepest nesting accepted (indentation levels or brackets).
pub const MAX_DEPTH: usize = 64;

/// The file's text, refused when it is not a regular file, too large, or uses anchors, aliases
/// or deep nesting.
pub fn read_yaml_text(path: &Path) -> Result<String, String> {
    let text = read_regular_text(path, MAX_BYTES).map_err(|refusal| match refusal {
        Refusal::Io(message) => message,
        Refusal::NotRegular => "not a regular file (a FIFO, socket or device)".into(),
        Refusal::TooLarge(bytes) => {
            format!("{bytes} bytes is more than the {MAX_BYTES} a rules or baseline file may have")
        }
    })?;
    check(&text)?;
    Ok(text)
}

/// Refuses anchors, aliases and deep nesting in `text`.
pub fn check(text: &str) -> Result<(), String> {
    let mut flow_depth = 0usize;
    for (n, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if indent / 2 > MAX_DEPTH {
            return Err(format!(
                "line {}: nested deeper than {MAX_DEPTH} levels",
                n + 1
            ));
        }
        let mut quote: Option<char> = None;
        // Where a node may start: the line's start, or after '- ', ': ', '[', '{', ',', '? '.
        let mut node_start = true;
        let mut prev = ' ';
        for c in line.trim_start().chars() {
            match quote {
                Some(q) => {
                    if c == q {
                        quote = None;
                    }
                }
                None => match c {
                    '#' if prev == ' ' || prev == '\t' => break,
                    '\'' | '"' if node_start => quote = Some(c),
                    '&' | '*' if node_start => {
                        return Err(format!(
                            "line {}: YAML anchors and aliases ('&name', '*name') are not \
                             accepted in rules or baselines; write each value out",
                            n + 1
                        ));
                    }
                    '[' | '{' => {
                        flow_depth += 1;
                        if flow_depth > MAX_DEPTH {
                            return Err(format!(
                                "line {}: nested deeper than {MAX_DEPTH} levels",
                                n + 1
                            ));
                        }
                    }
                    ']' | '}' => flow_depth = flow_depth.saturating_sub(1),
                    _ => {}
                },
            }
            node_start = match c {
                ' ' | '\t' => node_start || matches!(prev, '-' | ':' | ',' | '?' | '[' | '{'),
                '[' | '{' | ',' => quote.is_none(),
                _ => false,
            };
            prev = c;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_and_deep_nesting_are_refused_by_line() {
        let ok = "rules:\n  - metrics: '^a*b: *c &d'\n    tolerance_pct: 5 # a * comment &x\n  - metrics: \"[*]\"\n    tolerance_pct: 1\n";
        assert_eq!(check(ok), Ok(()));
        let alias = "base: &b {tolerance_pct: 5}\nrules:\n  - *b\n";
        assert!(check(alias).unwrap_err().starts_with("line 1:"));
        assert!(check("rules:\n  - *b\n").unwrap_err().contains("line 2"));
        assert!(check("a: [*x]\n").is_err());
        let deep = format!("a: {}{}\n", "[".repeat(100), "]".repeat(100));
        assert!(check(&deep).unwrap_err().contains("nested deeper"));
    }
}
