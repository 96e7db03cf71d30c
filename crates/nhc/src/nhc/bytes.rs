//! Bytes as NHC holds them: names, paths and lines of a Linux machine are bytes, not UTF-8.
//! They are matched as bytes and shown to people with every undecodable byte escaped (`\xff`),
//! so a message never hides or changes one.

/// `bytes` for people: valid UTF-8 as it is, every other byte as `\xNN`.
pub fn show(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// `bytes` without leading and trailing spaces and tabs.
pub fn trim(bytes: &[u8]) -> &[u8] {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let start = bytes.iter().position(|b| !blank(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !blank(b))
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}

/// Whitespace as the shell and `ps` split on: space, tab, newline.
pub fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n')
}

/// The words of `bytes`, split on runs of spaces, tabs and newlines.
pub fn words(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|b| is_blank(*b)).filter(|w| !w.is_empty())
}

/// `bytes` read as a decimal number of the type, or `None`.
pub fn number<T: std::str::FromStr>(bytes: &[u8]) -> Option<T> {
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undecodable_bytes_are_shown_escaped_and_the_rest_as_is() {
        assert_eq!(show(b"caf\xc3\xa9"), "café");
        assert_eq!(show(b"caf\xe9 \xff/x"), "caf\\xe9 \\xff/x");
        assert_eq!(show(b""), "");
    }

    #[test]
    fn trimming_and_words_cut_only_blanks() {
        assert_eq!(trim(b" \t a b\t "), b"a b");
        assert_eq!(trim(b"  "), b"");
        let w: Vec<&[u8]> = words(b" a\xff \t b\n").collect();
        assert_eq!(w, [&b"a\xff"[..], b"b"]);
        assert_eq!(number::<u32>(b"42"), Some(42));
        assert_eq!(number::<u32>(b"4\xff"), None);
    }
}
