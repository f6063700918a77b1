"""swe_local's languages other than Python: Go and Rust tasks from Debian's packages."""
