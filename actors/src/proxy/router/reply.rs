//! Where an upstream's answer goes: the one waiting for it, as a tree or as read.

use serde_json::Value;
use tokio::sync::oneshot;

use crate::mcp::relayed::Relayed;

/// Where an answer goes: a tree to whoever asked for one, or a plain result as read to a
/// session that takes it so (`Router::try_forward_relayed`).
pub enum Reply {
    Tree(oneshot::Sender<Value>),
    Relayed(oneshot::Sender<Relayed>),
}

impl Reply {
    /// False when nobody waits any more (the host cancelled).
    pub fn send(self, msg: Value) -> bool {
        match self {
            Reply::Tree(tx) => tx.send(msg).is_ok(),
            Reply::Relayed(tx) => tx.send(Relayed::Tree(msg)).is_ok(),
        }
    }

    /// [`Reply::send`]; one who asked for a tree gets the tree.
    pub fn send_relayed(self, msg: Relayed) -> bool {
        match self {
            Reply::Tree(tx) => tx.send(msg.into_value()).is_ok(),
            Reply::Relayed(tx) => tx.send(msg).is_ok(),
        }
    }
}
