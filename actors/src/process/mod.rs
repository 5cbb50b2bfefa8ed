//! How the process holds up, whatever a request does: a panic contained to one answer
//! (`contain`), the one policy for poisoned locks (`locks`), memory given back after large work
//! (`memory`), and fault injection for tests (`faults`, debug builds only).

pub mod contain;
pub mod faults;
pub mod locks;
pub mod memory;
