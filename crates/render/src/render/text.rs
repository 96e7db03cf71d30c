//! Text from documents made safe and short for people: control characters (terminal escape
//! sequences among them) and bidirectional overrides shown as `\u{..}` instead of acting on the
//! operator's terminal or reordering a page (the HTML escape applies it too), and long strings
//! cut with a marker.

/// `text` with every control character (C0, DEL, C1) and bidirectional control (U+200E/F,
/// U+202A..U+202E, U+2066..U+2069) written as `\u{XX}`, so a hostile document cannot rewrite the
/// terminal it is shown on or reorder what is shown.
pub fn terminal_safe(text: &str) -> String {
    let needs = |c: char| {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(needs) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if needs(c) {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

pub use crate::units::shorten;

/// At most `bytes` bytes of `text` (node-problem-detector cuts its plugins' output by bytes),
/// cut on a character boundary, the last one `~` when it was cut.
pub fn shorten_bytes(text: &str, bytes: usize) -> String {
    if text.len() <= bytes {
        return text.to_string();
    }
    let mut end = bytes.saturating_sub(1);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}~", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_cannot_reach_the_terminal() {
        assert_eq!(
            terminal_safe("\u{1b}]0;TITLE\u{7}\u{1b}[2J"),
            "\\u{1b}]0;TITLE\\u{7}\\u{1b}[2J"
        );
        assert_eq!(terminal_safe("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(terminal_safe("héllo wörld"), "héllo wörld");
        assert_eq!(terminal_safe("a\u{9b}b"), "a\\u{9b}b");
        assert_eq!(shorten("abcdef", 4), "abc~");
        assert_eq!(shorten("abc", 4), "abc");
        assert_eq!(shorten_bytes("abcdef", 4), "abc~");
        assert_eq!(shorten_bytes("abc", 4), "abc");
        // Never in the middle of a character: 'é' is two bytes.
        assert_eq!(shorten_bytes("aéé", 4), "aé~");
        assert_eq!(shorten_bytes("ééé", 4), "é~");
    }
}
