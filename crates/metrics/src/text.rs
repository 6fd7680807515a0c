//! Text normalisation shared by every metric.

/// Python's `str.strip()` with no argument: removes leading and trailing characters for which
/// `str.isspace()` is true. That is Unicode White_Space plus U+001C..U+001F, which Python counts as
/// whitespace and Rust's `char::is_whitespace` does not.
pub fn python_strip(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// Python's `len()` of a string: the number of code points.
pub fn code_points(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_what_python_strips() {
        assert_eq!(python_strip("\u{3000} 你好\r\n\u{1f}"), "你好");
        assert_eq!(python_strip("\u{200b}x"), "\u{200b}x"); // zero-width space is not whitespace in Python
        assert_eq!(python_strip(" \t "), "");
    }
}
