"""tests/deploy: what `make install` puts on a machine (man pages, the
systemd unit and its sysusers.d/tmpfiles.d entries) and kennel run under the
unit's hardening; the helpers are in servicelib.py."""
