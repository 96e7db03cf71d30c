//! Lines as bash's `read LINE` (without `-r`) gives them, which is how NHC reads nhc.conf and
//! the files `check_file_contents` looks into: a backslash quotes the next byte and is dropped
//! (a backslash before a newline joins the next line), NUL bytes are dropped, blanks at both
//! ends are trimmed unless quoted, and a last line with no newline is never read. Streaming and
//! bounded: at most `limit` bytes are read in all.

use std::io::{BufRead, ErrorKind};

/// One line as `read` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its first physical line's number, from 1.
    pub number: usize,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The lines of a stream, read as `while read LINE` reads them.
pub struct Lines<R> {
    input: R,
    limit: u64,
    taken: u64,
    physical: usize,
    /// Set when the bound was reached before the end of the stream.
    pub truncated: bool,
    /// The last line, when it had no newline: `read` reads it but the loop never sees it.
    pub unterminated: Option<Line>,
    done: bool,
}

impl<R: BufRead> Lines<R> {
    /// Lines of `input`, reading at most `limit` bytes.
    pub fn new(input: R, limit: u64) -> Lines<R> {
        Lines {
            input,
            limit,
            taken: 0,
            physical: 0,
            truncated: false,
            unterminated: None,
            done: false,
        }
    }

    /// The next byte, `None` at the end (or the bound, or a stream with nothing more now).
    fn byte(&mut self) -> Option<u8> {
        if self.taken >= self.limit {
            self.truncated = true;
            return None;
        }
        loop {
            match self.input.fill_buf() {
                Ok([]) => return None,
                Ok(buf) => {
                    let b = buf[0];
                    self.input.consume(1);
                    self.taken += 1;
                    return Some(b);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // A pipe or device with nothing more now (opened without blocking), or an
                // error: the end, as far as this read goes.
                Err(_) => return None,
            }
        }
    }
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = Line;

    fn next(&mut self) -> Option<Line> {
        if self.done {
            return None;
        }
        self.physical += 1;
        let number = self.physical;
        // Bytes with whether a backslash quoted them (quoted blanks are kept at the ends).
        let mut bytes: Vec<(u8, bool)> = Vec::new();
        loop {
            let Some(b) = self.byte() else {
                self.done = true;
                if !bytes.is_empty() {
                    self.unterminated = Some(Line {
                        number,
                        bytes: trimmed(&bytes),
                    });
                }
                return None;
            };
            match b {
                b'\n' => {
                    return Some(Line {
                        number,
                        bytes: trimmed(&bytes),
                    });
                }
                0 => {}
                b'\\' => match self.byte() {
                    Some(b'\n') => self.physical += 1,
                    Some(0) | None => {}
                    Some(c) => bytes.push((c, true)),
                },
                b => bytes.push((b, false)),
            }
        }
    }
}

fn trimmed(bytes: &[(u8, bool)]) -> Vec<u8> {
    let blank = |&(b, quoted): &(u8, bool)| !quoted && matches!(b, b' ' | b'\t');
    let start = bytes.iter().position(|b| !blank(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !blank(b))
        .map_or(start, |e| e + 1);
    bytes[start..end].iter().map(|(b, _)| *b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8]) -> (Vec<(usize, Vec<u8>)>, Option<Line>) {
        let mut l = Lines::new(text, 1 << 20);
        let got = l.by_ref().map(|l| (l.number, l.bytes)).collect();
        (got, l.unterminated)
    }

    /// What `while read LINE; do printf '[%s]' "$LINE"; done` prints in bash 5.2.
    #[test]
    fn lines_are_what_bashs_read_gives() {
        let (got, last) = lines(b"  a b  \n\\ c\\ \nx\\\ny\nq\\$z\\\\\nn\0ul\nend");
        assert_eq!(
            got,
            [
                (1, b"a b".to_vec()),
                (2, b" c ".to_vec()),
                (3, b"xy".to_vec()),
                (5, b"q$z\\".to_vec()),
                (6, b"nul".to_vec()),
            ]
        );
        assert_eq!(
            last,
            Some(Line {
                number: 7,
                bytes: b"end".to_vec()
            })
        );
        let (got, last) = lines(b"caf\xe9\r\n");
        assert_eq!(got, [(1, b"caf\xe9\r".to_vec())]);
        assert_eq!(last, None);
    }

    #[test]
    fn reading_stops_at_its_bound() {
        let mut l = Lines::new(&b"aaaa\nbbbb\ncccc\n"[..], 7);
        assert_eq!(l.next().map(|l| l.bytes), Some(b"aaaa".to_vec()));
        assert_eq!(l.next(), None);
        assert!(l.truncated);
        use std::io::Read;
        let zeros = std::io::repeat(0).take(1 << 20);
        let mut l = Lines::new(std::io::BufReader::new(zeros), 1000);
        assert_eq!(l.next(), None);
        assert!(l.truncated);
    }
}
