# rules for gateway/deploy/ (see gateway/deploy/README.md): what `make
# install` puts on a machine to run kennel as a system service.

# Under the prefix, so that `make distcheck` and DESTDIR staging work: with
# --prefix=/usr these are Debian's /usr/lib/systemd/system, sysusers.d and
# tmpfiles.d; under /usr/local systemd reads /usr/local/lib/... too.
# Override on make's command line (make install systemdsystemunitdir=...).
systemdsystemunitdir = $(prefix)/lib/systemd/system
sysusersdir = $(prefix)/lib/sysusers.d
tmpfilesdir = $(prefix)/lib/tmpfiles.d
kennelconfdir = $(sysconfdir)/kennel

systemdsystemunit_DATA = gateway/deploy/kennel.service
dist_sysusers_DATA = gateway/deploy/sysusers.d/kennel.conf
dist_tmpfiles_DATA = gateway/deploy/tmpfiles.d/kennel.conf
# the unit's drop-in for an HTTP front other machines reach: the operator
# copies it into /etc/systemd/system/kennel.service.d/ (README "Deploying")
pkgdata_DATA = gateway/deploy/kennel-http.conf

# the installed paths go in at make time (make bindir=... agrees)
DEPLOY_SUBST = sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' -e 's|@pkgdatadir[@]|$(pkgdatadir)|g'
gateway/deploy/kennel.service: gateway/deploy/kennel.service.in Makefile
	$(MKDIR_P) gateway/deploy
	$(DEPLOY_SUBST) $(srcdir)/gateway/deploy/kennel.service.in > $@.tmp && mv $@.tmp $@
gateway/deploy/kennel-http.conf: gateway/deploy/kennel-http.conf.in Makefile
	$(MKDIR_P) gateway/deploy
	$(DEPLOY_SUBST) $(srcdir)/gateway/deploy/kennel-http.conf.in > $@.tmp && mv $@.tmp $@
CLEANFILES += gateway/deploy/kennel.service gateway/deploy/kennel-http.conf

# The operator's config: installed only where none is (an existing one is
# the operator's), removed only while it is still the one installed.
install-data-local: install-kennel-conf
uninstall-local: uninstall-kennel-conf
install-kennel-conf:
	$(MKDIR_P) '$(DESTDIR)$(kennelconfdir)'
	test -f '$(DESTDIR)$(kennelconfdir)/kennel.conf' || \
	  $(INSTALL_DATA) $(srcdir)/gateway/deploy/kennel.conf '$(DESTDIR)$(kennelconfdir)/kennel.conf'
uninstall-kennel-conf:
	-cmp -s $(srcdir)/gateway/deploy/kennel.conf '$(DESTDIR)$(kennelconfdir)/kennel.conf' && \
	  rm -f '$(DESTDIR)$(kennelconfdir)/kennel.conf'
	-rmdir '$(DESTDIR)$(kennelconfdir)'
.PHONY: install-kennel-conf uninstall-kennel-conf

EXTRA_DIST += gateway/deploy/README.md gateway/deploy/kennel.service.in gateway/deploy/kennel-http.conf.in gateway/deploy/kennel.conf \
	gateway/deploy/k8s/base/haproxy.cfg gateway/deploy/k8s/base/kennel-list.lua gateway/deploy/k8s/base/kustomization.yaml \
	gateway/deploy/k8s/base/gateways.yaml gateway/deploy/k8s/base/balancer.yaml \
	gateway/deploy/k8s/base/autoscaling.yaml gateway/deploy/k8s/base/kennel.conf \
	gateway/deploy/k8s/base/networkpolicy.yaml \
	gateway/deploy/k8s/pvc/kustomization.yaml gateway/deploy/k8s/pvc/state-volume.yaml \
	gateway/deploy/k8s/tls/kustomization.yaml gateway/deploy/k8s/tls/tls.yaml gateway/deploy/k8s/tls/kennel.conf \
	gateway/deploy/k8s/host-users/kustomization.yaml gateway/deploy/k8s/host-users/host-users.yaml \
	gateway/deploy/k8s/host-users/kennel.conf \
	gateway/deploy/container/Containerfile gateway/deploy/container/entrypoint.sh \
	gateway/deploy/container/probe.py gateway/deploy/container/README.md .containerignore
