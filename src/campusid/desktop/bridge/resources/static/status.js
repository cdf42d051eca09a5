"use strict";
// Reads /health only: it needs no token and says nothing personal.
(async function () {
  const status = document.getElementById("bridge-status");
  const signedIn = document.getElementById("signed-in");
  try {
    const response = await fetch("/health", { credentials: "omit", cache: "no-store" });
    const envelope = await response.json();
    status.textContent = envelope.success ? "running (API " + envelope.data.api_version + ")" : "error";
    status.className = envelope.success ? "ok" : "down";
    signedIn.textContent = envelope.success && envelope.data.logged_in ? "yes" : "no";
  } catch (err) {
    status.textContent = "unreachable";
    status.className = "down";
  }
})();
