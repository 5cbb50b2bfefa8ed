  /* ---- Elements ---- */
  function el(tag, cls, text) { var node = document.createElement(tag); if (cls) node.className = cls; if (text != null) node.textContent = text; return node; }
  function btn(text, cls, onClick, aria) {
    var button = el("button", cls, text); button.type = "button";
    if (aria) { button.setAttribute("aria-label", aria); button.title = aria; }
    button.addEventListener("click", onClick);
    return button;
  }
  /* Rows added, moved or removed are edits too: the JSON view follows. */
  function fire(target) { target.dispatchEvent(new Event("change", { bubbles: true })); }
  function focusIn(box) { var ctl = box && box.querySelector("input:not([readonly]),select,textarea"); if (ctl) ctl.focus(); }
