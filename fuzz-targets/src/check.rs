//! What every target checks of an error: it says something, and stays short.

use std::fmt::Display;

/// The longest error message accepted for any input. The parsers quote a bad token as
/// its first 40 characters and its length (`runtime/src/excerpt.rs`), so a message holds a
/// sentence and a few such quotes; one longer than this echoes the input whole, and a
/// 10 MB layout line or header would bury the message (and a log) under itself.
pub(crate) const MAX_MESSAGE_BYTES: usize = 1024;

/// Checks an error's message and returns it: not blank, at most [`MAX_MESSAGE_BYTES`].
/// `what` names the entry point in the panic message.
pub(crate) fn message(what: &str, error: &dyn Display) -> String {
    let text = error.to_string();
    assert!(!text.trim().is_empty(), "{what}: blank error message");
    assert!(
        text.len() <= MAX_MESSAGE_BYTES,
        "{what}: a {}-byte error message (more than {MAX_MESSAGE_BYTES}), the input echoed whole? {:.300}…",
        text.len(),
        text
    );
    text
}
