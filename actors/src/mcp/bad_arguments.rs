//! Arguments a caller got wrong. The type is the decision: it is answered as the caller's
//! mistake (a tool error the model can read and correct, or invalid params), never as a failure
//! of ours or of an upstream. The text says what is wrong and what to send instead.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadArguments(pub String);

impl BadArguments {
    pub fn new(why: impl Into<String>) -> Self {
        BadArguments(why.into())
    }
}
