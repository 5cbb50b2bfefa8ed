/* mcp-gen-ui View runtime: the MCP Apps View side (protocol 2026-01-26) over postMessage,
 * with the public names of the ext-apps SDK's App class. Inlined into every served page
 * because no host resolves the bare import of the ext-apps SDK package. */
(function () {
  "use strict";
  var PROTOCOL = "2026-01-26";
  function App(appInfo, capabilities, options) {
    this.appInfo = appInfo || { name: "mcp-gen-ui-view", version: "1" };
    this.capabilities = capabilities || {};
    this.options = options || {};
    this.timeoutMs = this.options.requestTimeoutMs || 30000;
    this._next = 1;
    this._pending = {};
    this._hostContext = {};
    this._hostCapabilities = {};
    this._hostInfo = null;
    this._connected = false;
    this._target = null;
    /* The call this View shows (its input and result), kept so that a page put in its place
       (replacePage) shows the same. _ownTool: the tool whose own calls from the page count. */
    this._lastInput = null;
    this._lastResult = null;
    this._ownTool = null;
  }
  App.prototype._post = function (msg) {
    (this._target || window.parent).postMessage(msg, "*");
  };
  /* A request to the host. With `onprogress`, as in the SDK, the request's id is its
     `_meta.progressToken`: the host's notifications/progress under that token go to onprogress
     while the request waits, and each one starts its time again (a call that says it is
     working is not one the host forgot). */
  App.prototype._request = function (method, params, onprogress) {
    var self = this, id = this._next++;
    params = params || {};
    if (typeof onprogress === "function") {
      params = Object.assign({}, params);
      params._meta = Object.assign({}, params._meta, { progressToken: id });
    }
    return new Promise(function (resolve, reject) {
      var p = self._pending[id] = { resolve: resolve, reject: reject, onprogress: onprogress, expire: function () {
        delete self._pending[id];
        reject(new Error(method + ": the host did not answer within " + self.timeoutMs + " ms"));
      } };
      p.timer = setTimeout(p.expire, self.timeoutMs);
      self._post({ jsonrpc: "2.0", id: id, method: method, params: params });
    });
  };
  /* notifications/progress of a request still waiting that asked for it; others are dropped
     (a token the host made up, a report after the answer). */
  App.prototype._progress = function (params) {
    var p = this._pending[Number(params.progressToken)];
    if (!p || typeof p.onprogress !== "function") return;
    clearTimeout(p.timer);
    p.timer = setTimeout(p.expire, this.timeoutMs);
    try { p.onprogress({ progress: params.progress, total: params.total, message: params.message }); } catch (e) { console.error("mcp-gen-ui: onprogress failed", e); }
  };
  App.prototype._notify = function (method, params) {
    this._post({ jsonrpc: "2.0", method: method, params: params || {} });
  };
  App.prototype._call = function (name, arg) {
    var h = this[name];
    if (typeof h !== "function") return undefined;
    try { return h.call(this, arg); } catch (e) { console.error("mcp-gen-ui: " + name + " failed", e); }
  };
  App.prototype._onMessage = function (ev) {
    if (ev.source !== (this._target || window.parent)) return;
    var m = ev.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.method === undefined && m.id !== undefined) {
      var p = this._pending[m.id];
      if (!p) return;
      delete this._pending[m.id];
      clearTimeout(p.timer);
      if (m.error) {
        var err = new Error(m.error.message || "request failed");
        err.code = m.error.code; err.data = m.error.data;
        p.reject(err);
      } else p.resolve(m.result);
      return;
    }
    var params = m.params || {};
    switch (m.method) {
      case "ui/notifications/tool-input": this._lastInput = params; this._call("ontoolinput", params); break;
      case "ui/notifications/tool-input-partial": this._call("ontoolinputpartial", params); break;
      case "ui/notifications/tool-result": this._lastResult = params; this._call("ontoolresult", unwrapResult(params)); break;
      case "ui/notifications/tool-cancelled": this._call("ontoolcancelled", params); break;
      case "ui/notifications/host-context-changed":
        Object.assign(this._hostContext, params);
        applyHostContext(this._hostContext);
        this._call("onhostcontextchanged", params);
        break;
      case "ui/resource-teardown":
        var self = this;
        Promise.resolve(this._call("onteardown", params)).then(function () {
          self._post({ jsonrpc: "2.0", id: m.id, result: {} });
        });
        break;
      case "notifications/progress": this._progress(params); break;
      case "ping":
        if (m.id !== undefined) this._post({ jsonrpc: "2.0", id: m.id, result: {} });
        break;
      default:
        if (m.id !== undefined) this._post({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found: " + m.method } });
    }
  };
  App.prototype.connect = function (transport) {
    var self = this;
    if (transport && transport.target) this._target = transport.target;
    if (!this._listener) {
      this._listener = function (ev) { self._onMessage(ev); };
      window.addEventListener("message", this._listener);
    }
    var carry = takeCarry();
    if (carry) return this._resume(carry);
    return this._request("ui/initialize", {
      appInfo: this.appInfo, appCapabilities: this.capabilities, protocolVersion: PROTOCOL
    }).then(function (res) {
      res = res || {};
      self._hostInfo = res.hostInfo || null;
      self._hostCapabilities = res.hostCapabilities || {};
      self._hostContext = res.hostContext || {};
      applyHostContext(self._hostContext);
      self._connected = true;
      current = self;
      self._notify("ui/notifications/initialized", {});
      if (self.options.autoResize !== false) self._autoResize();
      return res;
    });
  };
  /* This page replaced one that was connected (replacePage): the host's View is already
     initialized, so nothing is asked again; the page gets what the host told the one before it,
     then the call that page showed, as if the host had sent them. */
  App.prototype._resume = function (carry) {
    var self = this;
    this._next = Math.max(this._next, carry.next || 1);
    this._hostInfo = carry.hostInfo || null;
    this._hostCapabilities = carry.hostCapabilities || {};
    this._hostContext = carry.hostContext || {};
    applyHostContext(this._hostContext);
    this._connected = true;
    current = this;
    if (this.options.autoResize !== false) this._autoResize();
    setTimeout(function () {
      if (carry.input) { self._lastInput = carry.input; self._call("ontoolinput", carry.input); }
      if (carry.result) { self._lastResult = carry.result; self._call("ontoolresult", unwrapResult(carry.result)); }
    }, 0);
    return Promise.resolve({ protocolVersion: PROTOCOL, hostInfo: this._hostInfo, hostCapabilities: this._hostCapabilities, hostContext: this._hostContext });
  };
  /* Puts `html` (a whole page) in this page's place, in the same frame: the host keeps talking
     to the same View. What the new page needs of this one travels in a global that survives
     document.open; timers and listeners of this page are stopped first. */
  App.prototype.replacePage = function (html, typed) {
    for (var id in this._pending) clearTimeout(this._pending[id].timer);
    this._pending = {};
    if (this._resizeObserver) this._resizeObserver.disconnect();
    /* What the person typed in this page goes to the new one as the call's input, over what
       the host sent, where the names match: the written page fills its own fields from it. */
    var input = this._lastInput;
    if (typed && typeof typed === "object" && !this._lastResult) {
      var args = {}, from = (input && input.arguments) || {}, k;
      for (k in from) if (Object.prototype.hasOwnProperty.call(from, k)) args[k] = from[k];
      for (k in typed) if (Object.prototype.hasOwnProperty.call(typed, k)) args[k] = typed[k];
      input = { arguments: args };
    }
    window.__mcpGenUiCarry = {
      hostInfo: this._hostInfo, hostCapabilities: this._hostCapabilities, hostContext: this._hostContext,
      input: input, result: this._lastResult, next: this._next, at: Date.now()
    };
    this.close();
    current = null;
    /* Document's own methods, not document.close: in a browser a <form name="close"> of the page
       just written is document.close (named access), and the new page would never finish. */
    var own = Document.prototype;
    own.open.call(document);
    own.write.call(document, html);
    own.close.call(document);
  };
  App.prototype._autoResize = function () {
    var self = this, last = "";
    function report() {
      var el = document.documentElement;
      var size = { width: Math.ceil(el.scrollWidth), height: Math.ceil(el.scrollHeight) };
      var key = size.width + "x" + size.height;
      if (key !== last) { last = key; self.sendSizeChanged(size); }
    }
    if (typeof ResizeObserver === "function") {
      this._resizeObserver = new ResizeObserver(report);
      this._resizeObserver.observe(document.documentElement);
    }
    report();
  };
  /* Every call asks for progress, as the SDK's App does (a no-op `onprogress` unless the
     caller gives one in `options`, the SDK's RequestOptions): a long call that reports progress
     (a task the service runs for the page) outlives the timeout. */
  App.prototype.callServerTool = function (p, options) {
    var self = this, mine = p.name === this._ownTool;
    if (mine) this._lastInput = { arguments: p.arguments || {} };
    return this._request("tools/call", { name: p.name, arguments: p.arguments || {} }, (options && options.onprogress) || function () {}).then(function (r) {
      if (mine) self._lastResult = r;
      return unwrapResult(r);
    });
  };
  App.prototype.readServerResource = function (p) { return this._request("resources/read", { uri: p.uri }); };
  App.prototype.sendMessage = function (p) {
    var c = p && p.content;
    return this._request("ui/message", { role: (p && p.role) || "user", content: Array.isArray(c) ? c : (c ? [c] : []) });
  };
  App.prototype.openLink = function (p) { return this._request("ui/open-link", { url: p.url }); };
  App.prototype.requestDisplayMode = function (p) { return this._request("ui/request-display-mode", { mode: p.mode }); };
  /* Draft ext-apps: the host saves files a sandboxed View cannot (capability downloadFile). */
  App.prototype.downloadFile = function (p) { return this._request("ui/download-file", { contents: (p && p.contents) || [] }); };
  App.prototype.updateModelContext = function (p) { return this._request("ui/update-model-context", p || {}); };
  App.prototype.sendLog = function (p) { this._notify("notifications/message", { level: p.level || "info", data: p.data, logger: p.logger }); };
  App.prototype.sendSizeChanged = function (p) { this._notify("ui/notifications/size-changed", p); };
  App.prototype.getHostContext = function () { return this._hostContext; };
  App.prototype.getHostCapabilities = function () { return this._hostCapabilities; };
  App.prototype.getHostVersion = function () { return this._hostInfo; };
  App.prototype.close = function () {
    if (this._listener) window.removeEventListener("message", this._listener);
    this._listener = null;
  };
  /* FastMCP (Python) returns a tool's non-object value as structuredContent {"result": X}; a
     page wants the object inside, also when X is a string holding JSON. */
  function unwrapResult(r) {
    var sc = r && r.structuredContent;
    if (!sc || typeof sc !== "object" || Array.isArray(sc)) return r;
    var keys = Object.keys(sc);
    if (keys.length !== 1 || keys[0] !== "result") return r;
    var inner = sc.result;
    if (typeof inner === "string" && /^\s*\{/.test(inner)) { try { inner = JSON.parse(inner); } catch (e) { return r; } }
    if (!inner || typeof inner !== "object" || Array.isArray(inner)) return r;
    var out = {}; for (var k in r) out[k] = r[k];
    out.structuredContent = inner;
    return out;
  }
  var fontsApplied = null;
  function px(v) { return typeof v === "number" && isFinite(v) && v >= 0 && v < 100000 ? v + "px" : null; }
  /* What the host says of its look and place: theme, the standardized CSS variables, its fonts,
     the container's bounds, the safe area and the locale, set on the root for pages to use. */
  function applyHostContext(ctx) {
    var root = document.documentElement;
    if (ctx.theme === "dark" || ctx.theme === "light") {
      root.setAttribute("data-theme", ctx.theme);
      root.style.colorScheme = ctx.theme;
    }
    var vars = ctx.styles && ctx.styles.variables;
    if (vars) for (var k in vars) if (vars[k] != null && k.indexOf("--") === 0) root.style.setProperty(k, String(vars[k]));
    var fonts = ctx.styles && ctx.styles.css && ctx.styles.css.fonts;
    if (typeof fonts === "string" && fonts.length < 65536 && fonts !== fontsApplied && document.head) {
      var old = document.getElementById("mcp-gen-ui-host-fonts");
      if (old) old.remove();
      var st = document.createElement("style"); st.id = "mcp-gen-ui-host-fonts"; st.textContent = fonts; document.head.appendChild(st);
      fontsApplied = fonts;
    }
    var dim = ctx.containerDimensions || {};
    [["width", "--host-width"], ["maxWidth", "--host-max-width"], ["height", "--host-height"], ["maxHeight", "--host-max-height"]].forEach(function (p) {
      var v = px(dim[p[0]]); if (v) root.style.setProperty(p[1], v); else root.style.removeProperty(p[1]);
    });
    var inset = ctx.safeAreaInsets || {};
    ["top", "right", "bottom", "left"].forEach(function (side) { root.style.setProperty("--safe-area-" + side, px(inset[side]) || "0px"); });
    if (typeof ctx.locale === "string" && /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(ctx.locale)) root.setAttribute("lang", ctx.locale);
    if (ctx.displayMode) root.setAttribute("data-display-mode", String(ctx.displayMode).slice(0, 20));
  }
  /* The connected View, for scripts beside the page's own (the provisional page's watcher). */
  var current = null;
  /* What a page put in this one's place left for it (fresh only: a stale one is dropped). */
  function takeCarry() {
    var c = window.__mcpGenUiCarry;
    if (!c) return null;
    try { delete window.__mcpGenUiCarry; } catch (e) { window.__mcpGenUiCarry = undefined; }
    return typeof c === "object" && Date.now() - c.at < 30000 ? c : null;
  }
  function PostMessageTransport(target) { this.target = target; }
  /* The SDK's style helpers, for generated pages that import them. */
  function applyDocumentTheme(theme) { applyHostContext({ theme: theme }); }
  function applyHostStyleVariables(vars) { applyHostContext({ styles: { variables: vars } }); }
  function applyHostFonts(css) {
    if (!css) return;
    var s = document.createElement("style"); s.textContent = css; document.head.appendChild(s);
  }
  globalThis.McpGenUiRuntime = { App: App, PostMessageTransport: PostMessageTransport, PROTOCOL_VERSION: PROTOCOL,
    applyDocumentTheme: applyDocumentTheme, applyHostStyleVariables: applyHostStyleVariables, applyHostFonts: applyHostFonts,
    current: function () { return current; },
    /* For the other dialect's adapter (apps_sdk.js), inlined right after this file. */
    applyHostContext: applyHostContext, _setCurrent: function (a) { current = a; }, _takeCarry: takeCarry, _unwrapResult: unwrapResult };
})();
