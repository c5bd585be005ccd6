//! Shortening user input that an error message quotes: a layout file or a flag can hold a
//! token of megabytes, and an error that echoes it whole buries the message (and a log).

/// Characters of an input that an error message quotes before it cuts.
pub(crate) const EXCERPT_CHARS: usize = 40;

/// `text` as an error message quotes it: whole when it has at most 40 characters, else
/// its first 40 characters, `…` and its length, so the reader still sees which input it is
/// and that it was cut. Public so that the other crates' parsers (mapping strings,
/// safetensors headers) quote their input the same way.
///
/// # Examples
///
/// ```
/// use taopipe_runtime::excerpt;
///
/// assert_eq!(excerpt("0-3,x"), "0-3,x");
/// let long = "7".repeat(1000);
/// assert_eq!(excerpt(&long), format!("{}… (1000 bytes in all)", "7".repeat(40)));
/// ```
pub fn excerpt(text: &str) -> String {
    match text.char_indices().nth(EXCERPT_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(excerpt(""), "");
        let forty = "x".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&forty), forty);
    }

    #[test]
    fn long_text_is_cut_with_its_length() {
        let long = "y".repeat(10_000_000);
        let quoted = excerpt(&long);
        assert_eq!(
            quoted,
            format!("{}… (10000000 bytes in all)", "y".repeat(EXCERPT_CHARS))
        );
    }

    #[test]
    fn cuts_fall_between_characters() {
        // Multi-byte characters: a byte-based cut would split one and panic.
        let text = "é".repeat(EXCERPT_CHARS + 1);
        assert_eq!(
            excerpt(&text),
            format!(
                "{}… ({} bytes in all)",
                "é".repeat(EXCERPT_CHARS),
                text.len()
            )
        );
    }
}
