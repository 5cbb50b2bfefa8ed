//! Where pages and what shapes them are kept: the page cache (moka, disk, Redis), ready read
//! results, refinement histories, learnt result shapes, the replicas' shared store and sync,
//! and the small state files beside the cache.

pub mod file_names;
pub mod learned_shapes;
pub mod ready_pages;
pub mod redis;
pub mod refinements;
pub mod replica_sync;
pub mod snapshot_file;
pub mod ui_cache;
