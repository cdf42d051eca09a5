"""The CAS face's rules, one per unit and no HTTP (Apereo CAS Protocol 3.0.3): service URLs and how
a request's `service` matches a registered one (services.py), the tickets' form (tickets.py), the
validation's parameters and error codes in their order (validation.py), the answers in XML, JSON
and CAS 1.0 text (responses.py), and the single logout message (logout_request.py)."""
