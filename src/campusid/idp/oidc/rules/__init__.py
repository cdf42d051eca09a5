"""Protocol rules, one named unit per RFC/OIDC rule; no HTTP framework and no SQL in here."""
