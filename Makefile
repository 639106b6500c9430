# Build and install locationd the way distributions package daemons.
#
#   make                                  build release binaries (swift build -c release)
#   sudo make install                     install under /usr/local (config in /etc/locationd)
#   make install PREFIX=/usr DESTDIR=/tmp/stage   stage a package tree
#   sudo make uninstall                   remove what install put there (not the configuration)
#   make deb                              build locationd_VERSION_ARCH.deb here (debian/, debhelper),
#                                         and python3-locationd_VERSION_all.deb (the Python client)
#   make install-python PYTHONDIR=DIR     install the Python client (clients/python/locationd) into DIR
#
# Installs: locationd and locationctl; the systemd units, sysusers.d and tmpfiles.d entries and the
# udev rule; /etc/locationd/locationd.conf (kept when it exists) and conf.d/; the demo capture; the man
# pages locationd(8), locationctl(1), locationd.conf(5). The units' ExecStart= names $(BINDIR).
# `make -o build install BUILD_BIN=DIR` installs binaries built elsewhere without building.

PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
UNITDIR ?= $(LIBDIR)/systemd/system
SYSUSERSDIR ?= $(LIBDIR)/sysusers.d
TMPFILESDIR ?= $(LIBDIR)/tmpfiles.d
UDEVRULESDIR ?= $(LIBDIR)/udev/rules.d
# The Python client's package directory: Debian's python3 finds /usr/lib/python3/dist-packages (the
# Debian package's), and /usr/local/lib/python3.X/dist-packages for a local install.
PYTHONDIR ?= $(LIBDIR)/python3/dist-packages

SWIFT ?= swift
# The Swift standard library, runtime and libdispatch linked into the binaries, so that they run on a
# machine without a Swift toolchain: `ldd` lists only Debian's libraries (libc, libm, libinih, libgcc_s),
# and no RUNPATH points into the build tree. libgps and libmosquitto are loaded with dlopen when
# configured, libsystemd when the policy depends on users' login sessions (Sources/CSystemdLogin).
# Linked with -z now (full RELRO: the GOT read-only after start-up), and PIE (ASLR) as before.
# Memory (issue 16, Benchmarks/README.md): linked by the toolchain's lld instead of gold, for two things
# gold cannot do. -z pack-relative-relocs (RELR; glibc >= 2.36, which dpkg-shlibdeps then requires):
# the ~28,000 relative relocations of the Swift metadata take 5.5 KiB instead of a 0.64 MiB .rela.dyn
# that the loader reads, and so keeps resident, at every start. --symbol-ordering-file: the functions
# the daemon runs (Scripts/locationd.order, made by Scripts/order-file) are placed together, so that it
# touches ~1 MiB of contiguous code (and libswiftCore's 1.5 MiB .text that cannot be split) instead of
# pages spread over all 6 MiB of it; our modules are compiled with -function-sections so that lld can
# move (and --gc-sections drop) each function. A function missing from the file (new code, another
# receiver) works the same, only placed elsewhere. The functions the compiler leaves without a symbol,
# which the file cannot name, are gathered by Scripts/locationd-text.ld (0.4 MiB less resident).
SWIFTFLAGS ?= --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now \
	-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
	-Xswiftc -Xfrontend -Xswiftc -function-sections \
	-Xlinker --symbol-ordering-file=$(CURDIR)/Scripts/locationd.order -Xlinker --no-warn-symbol-ordering \
	-Xlinker -T$(CURDIR)/Scripts/locationd-text.ld
# -disable-type-layout (a frontend option): values of large structs — a `Fix` is ~450 bytes — are then
# copied and destroyed by code made for their type, where type-layout lowering called the runtime's
# generic value witnesses through the type's metadata (an optional fix destroyed: six pages of
# libswiftCore's code, at every epoch, none of which stay in the TLB across the 100 ms between epochs).
# Issue 13: the gpsd front's CPU at 1 client, Benchmarks/README.md.
SWIFTFLAGS += -Xswiftc -Xfrontend -Xswiftc -disable-type-layout
# --no-export-dynamic: the Swift driver links executables with --export-dynamic, which put ~4,900 of our
# and the standard library's symbols in the dynamic symbol table (~0.4 MiB of .dynsym, .dynstr and hash
# that the loader reads at every start, and that every library's symbol look-up searched first). Nothing
# looks a symbol up in the executable: the Swift runtime finds its metadata through its own sections, and
# libgps (C++) then binds to its own libstdc++.so, not to the copy linked in here. 0.4 MiB less resident
# at 1 client (Benchmarks/README.md, issue 16).
SWIFTFLAGS += -Xlinker --no-export-dynamic
# libstdc++ (the Swift runtime's C++ half needs a little of it) linked statically too: the toolchain's
# static-stdlib-args.lnk asks for -lstdc++, which the directory below answers with a linker script naming
# libstdc++.a, so the daemon does not load libstdc++.so (1.0 MiB resident, of which it used a few
# functions) — it is loaded only with libgps, when a gpsd receiver is configured (Sources/CLibgps).
STATIC_CXX_DIR := $(CURDIR)/.build/static-libstdc++
STATIC_CXX_ARCHIVE = $(shell clang -print-file-name=libstdc++.a)
SWIFTFLAGS += -Xlinker -L$(STATIC_CXX_DIR)
# Where the release binaries are (evaluated only when not given).
BUILD_BIN ?= $(shell $(SWIFT) build -c release $(SWIFTFLAGS) --show-bin-path)

INSTALL ?= install
# Binaries are installed stripped; debian/rules empties this and lets dh_strip do it.
INSTALL_STRIP ?= -s
INSTALL_PROGRAM ?= $(INSTALL) -m 0755 $(INSTALL_STRIP)
INSTALL_DATA ?= $(INSTALL) -m 0644

.PHONY: all build install install-python uninstall uninstall-python deb

all: build

# SwiftPM does not know the order file or the linker script: a binary older than either is removed, so
# that it is linked again.
build: $(STATIC_CXX_DIR)/libstdc++.so
	@bin=$$($(SWIFT) build -c release $(SWIFTFLAGS) --show-bin-path); \
	for input in Scripts/locationd.order Scripts/locationd-text.ld; do \
		if [ -e "$$bin/locationd" ] && [ $$input -nt "$$bin/locationd" ]; then rm -f "$$bin/locationd"; fi; \
	done
	$(SWIFT) build -c release $(SWIFTFLAGS)

$(STATIC_CXX_DIR)/libstdc++.so:
	@case "$(STATIC_CXX_ARCHIVE)" in /*) ;; *) echo "libstdc++.a not found (Debian: libstdc++-12-dev)" >&2; exit 1;; esac
	mkdir -p $(STATIC_CXX_DIR)
	echo 'INPUT($(STATIC_CXX_ARCHIVE))' > $@

install: build
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) \
		$(DESTDIR)$(UDEVRULESDIR) $(DESTDIR)$(DATADIR)/locationd $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSCONFDIR)/locationd/conf.d \
		$(DESTDIR)$(DATADIR)/bash-completion/completions
	$(INSTALL_PROGRAM) $(BUILD_BIN)/locationd $(DESTDIR)$(BINDIR)/locationd
	$(INSTALL_PROGRAM) $(BUILD_BIN)/locationctl $(DESTDIR)$(BINDIR)/locationctl
	sed -e 's|/usr/bin/locationd|$(BINDIR)/locationd|g' -e 's|/etc/locationd/|$(SYSCONFDIR)/locationd/|g' \
		systemd/locationd.service > $(DESTDIR)$(UNITDIR)/locationd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/locationd.service
	$(INSTALL_DATA) systemd/locationd.socket $(DESTDIR)$(UNITDIR)/locationd.socket
	$(INSTALL_DATA) systemd/locationd-gpsd.socket $(DESTDIR)$(UNITDIR)/locationd-gpsd.socket
	$(INSTALL_DATA) systemd/sysusers.d/locationd.conf $(DESTDIR)$(SYSUSERSDIR)/locationd.conf
	sed -e 's|/etc/locationd/|$(SYSCONFDIR)/locationd/|g' \
		systemd/tmpfiles.d/locationd.conf > $(DESTDIR)$(TMPFILESDIR)/locationd.conf
	chmod 0644 $(DESTDIR)$(TMPFILESDIR)/locationd.conf
	$(INSTALL_DATA) systemd/udev/60-locationd.rules $(DESTDIR)$(UDEVRULESDIR)/60-locationd.rules
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/locationd/locationd.conf ]; then \
		echo "keeping $(DESTDIR)$(SYSCONFDIR)/locationd/locationd.conf (the shipped one is Config/locationd.conf)"; \
	else \
		echo "$(INSTALL_DATA) Config/locationd.conf $(DESTDIR)$(SYSCONFDIR)/locationd/locationd.conf"; \
		$(INSTALL_DATA) Config/locationd.conf $(DESTDIR)$(SYSCONFDIR)/locationd/locationd.conf; \
	fi
	$(INSTALL_DATA) Demo/haicom-305N.log $(DESTDIR)$(DATADIR)/locationd/demo.nmea
	$(INSTALL_DATA) Demo/COPYING-gpsd $(DESTDIR)$(DATADIR)/locationd/COPYING-gpsd
	$(INSTALL_DATA) man/locationctl.1 $(DESTDIR)$(MANDIR)/man1/locationctl.1
	$(INSTALL_DATA) man/locationd.conf.5 $(DESTDIR)$(MANDIR)/man5/locationd.conf.5
	$(INSTALL_DATA) man/locationd.8 $(DESTDIR)$(MANDIR)/man8/locationd.8
	$(INSTALL_DATA) Config/locationctl.bash-completion $(DESTDIR)$(DATADIR)/bash-completion/completions/locationctl
	@if [ -z "$(DESTDIR)" ]; then \
		echo; \
		echo "Now make the user and directories, and load the units and udev rule:"; \
		echo "  systemd-sysusers $(SYSUSERSDIR)/locationd.conf"; \
		echo "  systemd-tmpfiles --create $(TMPFILESDIR)/locationd.conf"; \
		echo "  systemctl daemon-reload && udevadm control --reload"; \
		echo "then configure a receiver in $(SYSCONFDIR)/locationd/locationd.conf and run"; \
		echo "  systemctl enable --now locationd.socket"; \
	fi

# The Python client: its .py files only (no __pycache__, which Debian's python3 makes itself).
install-python:
	$(INSTALL) -d $(DESTDIR)$(PYTHONDIR)/locationd
	$(INSTALL_DATA) clients/python/locationd/*.py $(DESTDIR)$(PYTHONDIR)/locationd/

uninstall-python:
	rm -rf $(DESTDIR)$(PYTHONDIR)/locationd

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/locationd $(DESTDIR)$(BINDIR)/locationctl \
		$(DESTDIR)$(UNITDIR)/locationd.service $(DESTDIR)$(UNITDIR)/locationd.socket \
		$(DESTDIR)$(UNITDIR)/locationd-gpsd.socket \
		$(DESTDIR)$(SYSUSERSDIR)/locationd.conf $(DESTDIR)$(TMPFILESDIR)/locationd.conf \
		$(DESTDIR)$(UDEVRULESDIR)/60-locationd.rules \
		$(DESTDIR)$(DATADIR)/locationd/demo.nmea $(DESTDIR)$(DATADIR)/locationd/COPYING-gpsd \
		$(DESTDIR)$(MANDIR)/man1/locationctl.1 $(DESTDIR)$(MANDIR)/man5/locationd.conf.5 \
		$(DESTDIR)$(MANDIR)/man8/locationd.8 $(DESTDIR)$(DATADIR)/bash-completion/completions/locationctl
	-rmdir $(DESTDIR)$(DATADIR)/locationd
	@echo "kept $(DESTDIR)$(SYSCONFDIR)/locationd and /var/lib/locationd"

# The Debian package, built with debhelper from debian/ (debian/rules calls `make build` and
# `make install`). Its version is debian/changelog's, which must be the daemon's own.
deb:
	@changelog=$$(dpkg-parsechangelog -S Version); \
	release=$$(sed -n 's/^ *public static let version = "\(.*\)"$$/\1/p' Sources/LocationWire/Release.swift); \
	if [ "$$changelog" != "$$release" ]; then \
		echo "debian/changelog is at $$changelog but locationd --version says $$release: add a changelog entry (dch -v $$release)"; \
		exit 1; \
	fi
	debian/rules clean
	debian/rules binary
	@ls -l locationd_$$(dpkg-parsechangelog -S Version)_$$(dpkg --print-architecture).deb
