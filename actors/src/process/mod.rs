//! How the process holds up, whatever a request does: a panic contained to one answer
//! (`contain`), the one policy for poisoned locks (`locks`), memory given back after large work
//! (`memory`), fault injection for tests (`faults`, debug builds only), and the threads sessions
//! live on, where links read their answers (`homes`).

pub mod contain;
pub mod faults;
pub mod homes;
pub mod locks;
pub mod memory;
pub mod tls;
