//! A check line's words, split as a shell splits a simple command, and nothing more of the shell.

/// Splits a check into words as a shell would a simple command: quotes kept together, `#`
/// starting a comment. Anything beyond a simple command (`;`, pipes, redirections, command
/// substitution) is an error: health_check runs checks, not shell.
pub fn words(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a quote (') is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => {
                            if let Some(c) = chars.next() {
                                word.push(c);
                            }
                        }
                        Some('`') => {
                            return Err("command substitution is shell, not a check".into());
                        }
                        Some(c) => word.push(c),
                        None => return Err("a quote (\") is not closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            ';' | '|' | '&' | '<' | '>' | '`' => {
                return Err(format!(
                    "'{c}' is shell beyond one check: give one check per line"
                ));
            }
            '$' if chars.peek() == Some(&'(') => {
                let rest: String = chars.clone().collect();
                if !rest.starts_with("((") {
                    return Err("command substitution is shell, not a check".into());
                }
                in_word = true;
                word.push('$');
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    Ok(out)
}
