// Passkeys (docs/mfa.md): ask the server for the ceremony's options, let the authenticator answer,
// post the answer in form#passkey-form. No third-party code; served by the IdP itself.
(function () {
  "use strict";
  function toBytes(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) { s += "="; }
    var raw = atob(s), out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) { out[i] = raw.charCodeAt(i); }
    return out.buffer;
  }
  function toText(buf) {
    var bytes = new Uint8Array(buf), s = "";
    for (var i = 0; i < bytes.length; i++) { s += String.fromCharCode(bytes[i]); }
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function ids(list) {
    return (list || []).map(function (c) { return Object.assign({}, c, { id: toBytes(c.id) }); });
  }
  function unavailable() {
    var box = document.getElementById("passkey-error");
    return (box && box.getAttribute("data-unavailable")) || "Passkeys are not available.";
  }
  function show(message) {
    var box = document.getElementById("passkey-error");
    if (box) { box.textContent = message; box.hidden = false; }
  }
  async function run(button) {
    var form = document.getElementById("passkey-form");
    var mode = button.getAttribute("data-passkey");
    var body = new URLSearchParams({ csrf_token: form.elements.csrf_token.value, mode: mode });
    var answer = await fetch(button.getAttribute("data-options"), {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" }
    });
    var data = await answer.json();
    if (!answer.ok) { show(data.message || data.error_description || unavailable()); return; }
    var options = data.publicKey, credential, response;
    options.challenge = toBytes(options.challenge);
    if (mode === "enrol") {
      options.user.id = toBytes(options.user.id);
      options.excludeCredentials = ids(options.excludeCredentials);
      credential = await navigator.credentials.create({ publicKey: options });
      response = {
        clientDataJSON: toText(credential.response.clientDataJSON),
        attestationObject: toText(credential.response.attestationObject),
        transports: credential.response.getTransports ? credential.response.getTransports() : []
      };
    } else {
      options.allowCredentials = ids(options.allowCredentials);
      credential = await navigator.credentials.get({ publicKey: options });
      response = {
        clientDataJSON: toText(credential.response.clientDataJSON),
        authenticatorData: toText(credential.response.authenticatorData),
        signature: toText(credential.response.signature),
        userHandle: credential.response.userHandle ? toText(credential.response.userHandle) : null
      };
    }
    form.elements.mode.value = mode;
    form.elements.handle.value = data.handle;
    form.elements.credential.value = JSON.stringify({
      id: credential.id, rawId: toText(credential.rawId), type: credential.type,
      response: response, clientExtensionResults: {}
    });
    form.submit();
  }
  document.querySelectorAll("[data-passkey]").forEach(function (button) {
    button.hidden = !window.PublicKeyCredential;
    button.addEventListener("click", function (event) {
      event.preventDefault();
      run(button).catch(function (error) { show(error && error.message ? error.message : String(error)); });
    });
  });
})();
