//! NHC's match strings, for host masks and for checks' arguments: a glob of the whole text,
//! `/regex/` (unanchored), a pdsh-style list `{n[01-10],login1}`, each negated by a leading `!`.

/// Whether `host` matches an NHC match string: `!` negates; `/re/` is an unanchored regular
/// expression; `{a,n[01-10]}` a pdsh-style list; anything else a glob of the whole name.
pub fn host_matches(mask: &str, host: &str) -> Result<bool, String> {
    let (negated, mask) = match mask.strip_prefix('!') {
        Some(m) => (true, m),
        None => (false, mask),
    };
    let hit = if let Some(re) = mask
        .strip_prefix('/')
        .and_then(|m| m.strip_suffix('/'))
        .filter(|_| mask.len() >= 2)
    {
        regex::Regex::new(re)
            .map_err(|e| format!("'/{re}/' is no regular expression: {e}"))?
            .is_match(host)
    } else if let Some(list) = mask.strip_prefix('{').and_then(|m| m.strip_suffix('}')) {
        list.split(',').any(|item| in_range(item, host))
    } else {
        glob(mask)?.is_match(host)
    };
    Ok(hit != negated)
}

/// A glob (`*`, `?`, `[...]`) as a regular expression of the whole text.
pub fn glob(pattern: &str) -> Result<regex::Regex, String> {
    let mut re = String::from("^");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                re.push('[');
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                    match c {
                        '!' if re.ends_with('[') => re.push('^'),
                        '\\' | '[' => {
                            re.push('\\');
                            re.push(c);
                        }
                        c => re.push(c),
                    }
                }
                re.push(']');
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re).map_err(|e| format!("'{pattern}' is no glob: {e}"))
}

/// One item of a pdsh-style list: a name, or `prefix[START-END]suffix` with the number of the
/// name within the range and written as wide as the range's bounds.
fn in_range(item: &str, host: &str) -> bool {
    let Some((prefix, rest)) = item.split_once('[') else {
        return item == host;
    };
    let Some((range, suffix)) = rest.split_once(']') else {
        return false;
    };
    let Some((lo, hi)) = range.split_once('-') else {
        return format!("{prefix}{range}{suffix}") == host;
    };
    let Some(number) = host
        .strip_prefix(prefix)
        .and_then(|h| h.strip_suffix(suffix))
    else {
        return false;
    };
    let width = lo.len().max(hi.len());
    let (Ok(lo_n), Ok(hi_n), Ok(n)) = (lo.parse::<u64>(), hi.parse::<u64>(), number.parse::<u64>())
    else {
        return false;
    };
    number.len() == width && n >= lo_n.min(hi_n) && n <= lo_n.max(hi_n)
}
