//! File names made from names that come from the upstream (tool names): safe on any filesystem.

/// A file name made from a tool name: letters, digits, `_`, `-` and `.` only.
pub fn file_stem(tool: &str) -> String {
    let s: String = tool.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with('.') {
        format!("tool{s}")
    } else {
        s
    }
}
