//! Configuration: the command line (`cli`), the JSON config file and its schema (`file`), how
//! flags, environment and file resolve into the settings the service runs with (`settings`),
//! and bearer tokens (`tokens`).

pub mod cli;
pub mod file;
pub mod file_error;
pub mod nearest;
pub mod redact;
pub mod settings;
pub mod tokens;
