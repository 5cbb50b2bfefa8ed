/* mcp-gen-ui View runtime, the OpenAI Apps SDK dialect: hosts that give the page a
 * `window.openai` object (ChatGPT's Apps SDK, MCPJam) instead of answering ui/initialize. The
 * page keeps the App API; here it is carried over window.openai: the tool's input and output
 * and the host's theme, locale and display mode from its globals and their set_globals events
 * (`openai:set_globals` in ChatGPT, `webplus:set_globals` in MCPJam's Tools tab), calls through
 * callTool, sendFollowUpMessage, openExternal and requestDisplayMode. Runs right after
 * runtime.js, inlined with it into every page. */
(function () {
  "use strict";
  var R = globalThis.McpGenUiRuntime;
  if (!R || !R.App) return;
  var P = R.App.prototype;
  /* How long a page waits for ui/initialize before it looks for window.openai, which some
     hosts set only after the page's scripts started. */
  var GRACE_MS = 1500;
  var GLOBALS_EVENTS = ["openai:set_globals", "webplus:set_globals"];

  function host() { var o = window.openai; return o && typeof o === "object" ? o : null; }
  function fn(o, name) { return o && typeof o[name] === "function"; }
  function same(a, b) { try { return JSON.stringify(a) === JSON.stringify(b); } catch (e) { return false; } }

  function capabilities(o) {
    var c = {};
    if (fn(o, "callTool")) c.serverTools = {};
    if (fn(o, "openExternal")) c.openLinks = {};
    if (fn(o, "sendFollowUpMessage")) c.message = { text: {} };
    if (fn(o, "setWidgetState")) c.updateModelContext = { text: {} };
    return c;
  }
  /* The host context the MCP Apps side would send, from what window.openai says (only the
     fields it has, so that a partial update stays partial). */
  function context(g, o) {
    var c = {};
    if (g.theme === "light" || g.theme === "dark") c.theme = g.theme;
    if (typeof g.locale === "string") c.locale = g.locale;
    if (typeof g.displayMode === "string") c.displayMode = g.displayMode;
    if (typeof g.maxHeight === "number") c.containerDimensions = { maxHeight: g.maxHeight };
    var inset = g.safeArea && g.safeArea.insets;
    if (inset && typeof inset === "object") c.safeAreaInsets = { top: inset.top || 0, right: inset.right || 0, bottom: inset.bottom || 0, left: inset.left || 0 };
    var device = g.userAgent && g.userAgent.device;
    if (device && typeof device.type === "string") c.platform = device.type === "desktop" ? "web" : "mobile";
    if (o && fn(o, "requestDisplayMode")) c.availableDisplayModes = ["inline", "fullscreen", "pip"];
    return c;
  }
  /* window.openai.toolOutput is the call's structuredContent; the page is handed the
     CallToolResult it would get from an MCP Apps host. */
  function asResult(output, meta) {
    var text = typeof output === "string" ? output : JSON.stringify(output);
    var r = { content: [{ type: "text", text: text == null ? "" : text }] };
    if (output && typeof output === "object" && !Array.isArray(output)) r.structuredContent = output;
    if (meta && typeof meta === "object") r._meta = meta;
    return r;
  }
  /* What callTool resolved to, as a CallToolResult: hosts answer the whole result, its
     structuredContent, or ChatGPT's older `{result: "<text>"}`. */
  function normalize(res) {
    /* A failure some hosts resolve with instead of rejecting: {isError: true, error: "..."}. */
    if (res && typeof res === "object" && res.isError === true && !Array.isArray(res.content)) {
      return { isError: true, content: [{ type: "text", text: String(res.error || "the tool call failed") }] };
    }
    if (res && typeof res === "object" && (Array.isArray(res.content) || res.structuredContent !== undefined || res.isError !== undefined)) return res;
    if (res && typeof res === "object" && typeof res.result === "string" && Object.keys(res).length === 1) {
      var parsed = null;
      try { parsed = JSON.parse(res.result); } catch (e) { parsed = null; }
      var r = { content: [{ type: "text", text: res.result }] };
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) r.structuredContent = parsed;
      return r;
    }
    return asResult(res, null);
  }

  /* Connects over window.openai; `carry`: what a page this one replaced had shown. */
  P._viaOpenAi = function (o, carry) {
    var self = this;
    this._openai = o;
    this._hostInfo = { name: "openai-apps-sdk", version: "1" };
    this._hostCapabilities = capabilities(o);
    this._hostContext = context(o, o);
    R.applyHostContext(this._hostContext);
    this._connected = true;
    R._setCurrent(this);
    this._openaiListener = function (e) { self._openaiGlobals((e && e.detail && e.detail.globals) || {}, false); };
    GLOBALS_EVENTS.forEach(function (t) { window.addEventListener(t, self._openaiListener); });
    if (this.options.autoResize !== false) this._autoResize();
    setTimeout(function () {
      if (carry) {
        /* The call the page before showed, as it showed it; later globals are news. */
        self._seenInput = o.toolInput; self._seenOutput = o.toolOutput;
        if (carry.input) { self._lastInput = carry.input; self._call("ontoolinput", carry.input); }
        if (carry.result) { self._lastResult = carry.result; self._call("ontoolresult", R._unwrapResult(carry.result)); }
      } else {
        self._openaiGlobals(o, true);
      }
    }, 0);
    return Promise.resolve({ protocolVersion: R.PROTOCOL_VERSION, hostInfo: this._hostInfo, hostCapabilities: this._hostCapabilities, hostContext: this._hostContext });
  };

  /* What the host set (all of window.openai at first, then each set_globals event). */
  P._openaiGlobals = function (g, first) {
    var ctx = context(g, null);
    if (Object.keys(ctx).length) {
      Object.assign(this._hostContext, ctx);
      R.applyHostContext(this._hostContext);
      if (!first) this._call("onhostcontextchanged", ctx);
    }
    if (g.toolInput != null && !same(g.toolInput, this._seenInput)) {
      this._seenInput = g.toolInput;
      this._lastInput = { arguments: g.toolInput };
      this._call("ontoolinput", this._lastInput);
    }
    if (g.toolOutput != null && !same(g.toolOutput, this._seenOutput)) {
      this._seenOutput = g.toolOutput;
      var meta = g.toolResponseMetadata !== undefined ? g.toolResponseMetadata : (this._openai && this._openai.toolResponseMetadata);
      this._lastResult = asResult(g.toolOutput, meta);
      this._call("ontoolresult", R._unwrapResult(this._lastResult));
    }
  };

  var baseConnect = P.connect;
  P.connect = function (transport) {
    var self = this, o = host();
    if (o) return this._viaOpenAi(o, R._takeCarry());
    var answered = baseConnect.call(this, transport);
    if (this._connected) return answered; // a page put in another's place
    return new Promise(function (resolve, reject) {
      var done = false, waited = 0;
      function look() {
        if (done) return;
        var late = host();
        if (late) { done = true; resolve(self._viaOpenAi(late, null)); return; }
        waited += 250;
        if (waited < 30000) setTimeout(look, waited < GRACE_MS ? 250 : 1000);
      }
      setTimeout(look, 250);
      answered.then(function (res) { if (!done) { done = true; resolve(res); } }, function (e) { if (!done) { done = true; reject(e); } });
    });
  };

  function unsupported(what) { return Promise.reject(new Error(what + ": this host (the Apps SDK dialect) does not offer it")); }
  function over(name, viaOpenAi) {
    var base = P[name];
    P[name] = function (p, options) { return this._openai ? viaOpenAi.call(this, this._openai, p || {}) : base.call(this, p, options); };
  }
  over("callServerTool", function (o, p) {
    var self = this, mine = p.name === this._ownTool, args = p.arguments || {};
    if (!fn(o, "callTool")) return unsupported("tools/call");
    if (mine) this._lastInput = { arguments: args };
    return Promise.resolve(o.callTool(p.name, args)).then(function (res) {
      var r = normalize(res);
      if (mine) self._lastResult = r;
      return R._unwrapResult(r);
    });
  });
  over("readServerResource", function () { return unsupported("resources/read"); });
  over("downloadFile", function () { return unsupported("ui/download-file"); });
  over("sendMessage", function (o, p) {
    if (!fn(o, "sendFollowUpMessage")) return unsupported("ui/message");
    var c = p.content, parts = Array.isArray(c) ? c : (c ? [c] : []);
    var prompt = parts.map(function (b) { return b && b.type === "text" ? b.text : ""; }).filter(Boolean).join("\n");
    return Promise.resolve(o.sendFollowUpMessage({ prompt: prompt })).then(function () { return {}; });
  });
  over("openLink", function (o, p) {
    if (!fn(o, "openExternal")) return unsupported("ui/open-link");
    return Promise.resolve(o.openExternal({ href: p.url })).then(function () { return {}; });
  });
  over("requestDisplayMode", function (o, p) {
    if (!fn(o, "requestDisplayMode")) return unsupported("ui/request-display-mode");
    var self = this;
    return Promise.resolve(o.requestDisplayMode({ mode: p.mode })).then(function (res) {
      var mode = (res && res.mode) || p.mode;
      self._hostContext.displayMode = mode;
      R.applyHostContext(self._hostContext);
      return { mode: mode };
    });
  });
  over("updateModelContext", function (o, p) {
    if (!fn(o, "setWidgetState")) return unsupported("ui/update-model-context");
    return Promise.resolve(o.setWidgetState({ modelContext: p })).then(function () { return {}; });
  });
  over("sendLog", function () { return undefined; });
  over("sendSizeChanged", function (o, p) {
    if (fn(o, "notifyIntrinsicHeight") && typeof p.height === "number") o.notifyIntrinsicHeight(p.height);
  });
  var baseClose = P.close;
  P.close = function () {
    var l = this._openaiListener;
    if (l) GLOBALS_EVENTS.forEach(function (t) { window.removeEventListener(t, l); });
    this._openaiListener = null;
    return baseClose.call(this);
  };
})();
