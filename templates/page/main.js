  /* ---- Start: the form, the wiring, the connection to the host ---- */
  buildForm();
  jsonToggle.addEventListener("click", toggleJson);
  fieldsEl.addEventListener("input", onFieldEdit);
  fieldsEl.addEventListener("change", onFieldEdit);
  jsonArgs.addEventListener("input", onJsonEdit);
  $("confirm-run").addEventListener("click", confirmRun);
  $("confirm-cancel").addEventListener("click", cancelRun);
  confirmBox.addEventListener("keydown", onConfirmKey);
  form.addEventListener("submit", submit);
  app.ontoolinput = function (params) { fill(params && params.arguments); };
  app.ontoolresult = function (result) { showResult(result, "Result"); };
  app.ontoolcancelled = function (params) { statusEl.textContent = "Cancelled" + (params && params.reason ? ": " + params.reason : "."); };
  app.connect().then(function () { document.body.setAttribute("data-ready", "true"); }, function (err) {
    statusEl.textContent = "Not connected to a host: " + err.message;
  });
})(); /* closes the function open.js opens */
