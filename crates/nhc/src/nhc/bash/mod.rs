//! The part of bash an nhc.conf line is written in, as bash reads it: NHC runs each check with
//! `eval $CHECK`, so a line is one simple command (assignments, a check's name, its arguments)
//! whose words are quoted, expanded (`$NAME`, `${NAME:-x}`, `$((...))`, `~`, braces) and split
//! as bash does. Anything beyond one simple command (`;`, pipes, redirections, command
//! substitution, compound commands) is refused by name: health_check runs checks, not shell.
//!
//! - [`words`]: a line's text to a [`words::Command`] (what is written, nothing evaluated);
//! - [`expand`]: its words to arguments, given the variables;
//! - [`arith`]: bash's arithmetic.

pub mod arith;
pub mod braces;
pub mod expand;
pub mod read;
pub mod words;

use std::collections::BTreeMap;

/// Variables as bash holds them: names and values are bytes.
pub trait Vars {
    /// The value of `name`, `None` when unset.
    fn get(&self, name: &[u8]) -> Option<Vec<u8>>;
    /// Sets `name` to `value`.
    fn set(&mut self, name: &[u8], value: Vec<u8>);
}

impl Vars for BTreeMap<Vec<u8>, Vec<u8>> {
    fn get(&self, name: &[u8]) -> Option<Vec<u8>> {
        BTreeMap::get(self, name).cloned()
    }
    fn set(&mut self, name: &[u8], value: Vec<u8>) {
        self.insert(name.to_vec(), value);
    }
}

/// Whether `name` is a shell variable's name: a letter or `_`, then letters, digits, `_`.
pub fn is_name(name: &[u8]) -> bool {
    match name.split_first() {
        Some((first, rest)) => {
            (first.is_ascii_alphabetic() || *first == b'_')
                && rest.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
        }
        None => false,
    }
}
