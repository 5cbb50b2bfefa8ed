//! The methods a host may send, classified once: what the plan decides on.

/// The methods a host may send, as the service decides on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Initialize,
    Ping,
    SetLevel,
    ToolsList,
    ToolsCall,
    ResourcesList,
    TemplatesList,
    PromptsList,
    ResourcesRead,
    Subscribe,
    Unsubscribe,
    PromptsGet,
    Complete,
    Discover,
    Listen,
    /// `tasks/get`, `tasks/result`, `tasks/cancel`: to the server that made the task, for the
    /// person whose call made it.
    Task,
    /// `tasks/list`: each server's list of the person's own tasks.
    TasksList,
    /// Anything else: passed to the server with bare names, if there is one.
    Other,
}

impl Method {
    pub fn of(name: &str) -> Method {
        match name {
            "initialize" => Method::Initialize,
            "ping" => Method::Ping,
            "logging/setLevel" => Method::SetLevel,
            "tools/list" => Method::ToolsList,
            "tools/call" => Method::ToolsCall,
            "resources/list" => Method::ResourcesList,
            "resources/templates/list" => Method::TemplatesList,
            "prompts/list" => Method::PromptsList,
            "resources/read" => Method::ResourcesRead,
            "resources/subscribe" => Method::Subscribe,
            "resources/unsubscribe" => Method::Unsubscribe,
            "prompts/get" => Method::PromptsGet,
            "completion/complete" => Method::Complete,
            "server/discover" => Method::Discover,
            "subscriptions/listen" => Method::Listen,
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/update" => Method::Task,
            "tasks/list" => Method::TasksList,
            _ => Method::Other,
        }
    }

    /// The known method `name` differs from only by case or whitespace (`Tools/Call`,
    /// `"tools/call "`): not an unknown method to pass on (a lenient server would run what the
    /// rules refuse under the known name), but a mistake to refuse.
    pub fn lookalike(name: &str) -> Option<&'static str> {
        const KNOWN: [&str; 20] = [
            "initialize",
            "ping",
            "logging/setLevel",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/templates/list",
            "prompts/list",
            "resources/read",
            "resources/subscribe",
            "resources/unsubscribe",
            "prompts/get",
            "completion/complete",
            "server/discover",
            "subscriptions/listen",
            "tasks/get",
            "tasks/result",
            "tasks/cancel",
            "tasks/update",
            "tasks/list",
        ];
        if name.len() > 64 || Method::of(name) != Method::Other {
            return None;
        }
        let bare: String = name.chars().filter(|c| !c.is_whitespace()).collect();
        KNOWN.into_iter().find(|k| k.eq_ignore_ascii_case(&bare))
    }

    /// Whether planning it needs the catalog (the servers listed once they settle).
    pub fn needs_catalog(self) -> bool {
        !matches!(self, Method::Ping | Method::SetLevel | Method::Discover | Method::Listen)
    }
}
