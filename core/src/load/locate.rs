//! Finding places in JSON text after the fact. The pointer lookup itself belongs to the
//! location layer ([`crate::source`]); this module keeps the loader's own needs.

pub use crate::source::pointer_offset_from;

/// Byte offset of the node at `pointer` (RFC 6901) in `json`: for an object member, where its key
/// starts; for a list element, where the element starts (for numbers and booleans in a list,
/// where the list starts). `None` if the pointer does not resolve or the text is not JSON.
pub fn pointer_offset(json: &str, pointer: &str) -> Option<usize> {
    pointer_offset_from(json, 0, pointer)
}

/// Byte offset of a (line, column) position as serde_json reports it: lines from one, columns
/// counting bytes from the line start (0 at the start of a line).
pub fn line_column_to_offset(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match memchr::memchr(b'\n', &text.as_bytes()[start..]) {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    (start + column.saturating_sub(1)).min(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_columns_map_back_to_offsets() {
        let text = "ab\ncd\nef";
        assert_eq!(line_column_to_offset(text, 1, 1), 0);
        assert_eq!(line_column_to_offset(text, 2, 2), 4);
        assert_eq!(line_column_to_offset(text, 3, 0), 6);
        assert_eq!(line_column_to_offset(text, 9, 1), text.len());
    }
}
