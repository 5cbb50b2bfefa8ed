//! `mcp-gen-ui export DIR`: make every tool's UI once, write DIR/<tool>.html, and exit. For CI
//! pipelines and for reviewing what the LLM made without a host.

use std::path::Path;

use mcp_gen_ui_actors::messages::{ReadUi, ReadWait};
use mcp_gen_ui_actors::proxy::router::READY_WAIT;
use mcp_gen_ui_actors::session::deps::SessionDeps;
use mcp_gen_ui_actors::store::file_names::file_stem;

pub async fn run(deps: &SessionDeps, dir: &Path) -> std::io::Result<()> {
    deps.fleet.settled(READY_WAIT * 6).await.map_err(std::io::Error::other)?;
    std::fs::create_dir_all(dir)?;
    let mut written = 0;
    for tool in deps.fleet.catalog().tools() {
        let name = tool.name.clone();
        if !deps.gets_page(tool) {
            continue;
        }
        let request_id = uuid::Uuid::new_v4().simple().to_string();
        // The whole page, however long it takes to write (within the generation's ceiling).
        let read = ReadUi {
            tool: (*tool.def).clone(),
            request_id,
            force: false,
            personal: None,
            trace: Default::default(),
            wait: ReadWait::Whole,
        };
        let entry = deps.queue.read.send(read).await.map_err(|_| std::io::Error::other("the generation queue stopped"))?.entry;
        let path = dir.join(format!("{}.html", file_stem(&name)));
        std::fs::write(&path, &entry.html)?;
        written += 1;
        println!(
            "{}  {} ({}{})",
            path.display(),
            name,
            entry.kind.as_str(),
            entry.fallback_reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default()
        );
    }
    println!("exported {written} tool UIs to {}", dir.display());
    Ok(())
}
