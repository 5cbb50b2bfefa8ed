//! How pages are made: the queue every `ui://` read goes through (single flight, slots, the
//! budget, leases across replicas), and the pipeline it runs (classify, prompt, LLM,
//! post-process, template fallback), with the providers in `llm/`.

pub mod cache_key;
pub mod classified_hook;
pub mod debug_files;
pub mod lease;
pub mod llm;
/// The minifier build.rs runs, compiled here for its tests.
#[cfg(test)]
#[path = "../../build/minify.rs"]
mod minify;
pub mod pace;
pub mod pipeline;
pub mod postprocess;
pub mod preview;
pub mod progress;
pub mod prompts;
pub mod queue;
pub mod scripts;
pub mod template_form;
pub mod templates;
pub mod warm;
