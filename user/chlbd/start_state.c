// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The desired state at start: the state file's directory made and its lock
 * taken (locks.c), then the config file (-c) or else the state file read;
 * a bad state file is set aside so it never becomes the last good copy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "chlbd.h"
#include "locks.h"
#include "ready.h"
#include "base/util.h"

/* The directory path is in (0700; missing parents 0755): 0 or -errno. */
static int mkdir_parent(const char *path)
{
	char buf[4096], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	p = strrchr(buf, '/');
	if (!p || p == buf)
		return 0;
	*p = '\0';
	return chlb_mkdir_p(buf, 0755, 0700);
}

/*
 * The state file was bad and FILE.prev was read: move the bad one aside to
 * FILE.bad (for a look), else the next write would keep it as FILE.prev,
 * the "last good copy", and a second bad write would leave chlbd with none.
 */
static void set_aside_bad_state(bool used_prev)
{
	char bad[4096 + 8];

	if (!used_prev)
		return;
	snprintf(bad, sizeof(bad), "%s.bad", D.state_path);
	if (!rename(D.state_path, bad))
		pr_warn("state: the bad state file is now %s; %s.prev stays the last good copy",
			bad, D.state_path);
	else if (errno != ENOENT)
		pr_warn("state: couldn't move the bad state file to %s (%s): the next change "
			"keeps it as %s.prev",
			bad, strerror(errno), D.state_path);
}

/*
 * The config's new services (against the state file: what served last) may
 * not take one of the host's own addresses without `force` (refuse.c).
 */
static int config_guard(const struct chlb_state *st, char *err, size_t errlen)
{
	struct chlb_state last;
	bool prev;
	int rc;

	chlb_state_init(&last);
	if (chlb_state_load_file(&last, D.state_path, &prev, err, errlen))
		chlb_state_free(&last); /* unreadable: every service is new */
	else
		set_aside_bad_state(prev);
	rc = chlbd_refuse(&last, st, false, false, err, errlen);
	chlb_state_free(&last);
	return rc;
}

/* Desired state at start: the config file when given, else the state file. */
int chlbd_state_initial(struct chlb_state *st)
{
	char err[CHLB_ERR_MAX + 128];
	bool prev;
	int rc;

	if (D.config_path) {
		char *text = chlb_read_file(D.config_path, CHLB_STATE_MAX_BYTES, err, sizeof(err));

		if (text && !chlb_state_exec_text(st, text, D.config_path, err, sizeof(err)) &&
		    !config_guard(st, err, sizeof(err))) {
			free(text);
			/* what SIGHUP's log compares with: changes made since are marked */
			if (chlb_state_copy(&D.config_state, st))
				chlb_state_init(&D.config_state);
			chlbd_ready_loaded(CHLBD_LOADED_CONFIG);
			return 0;
		}
		free(text);
		chlb_state_free(st);
		/* nothing from a bad file is applied: keep serving the last state */
		pr_err("config: %s; nothing from it applied, starting from the state file", err);
	}
	rc = chlb_state_load_file(st, D.state_path, &prev, err, sizeof(err));
	if (rc) {
		pr_err("state: %s; refusing to start (fix it, or remove it to start empty)", err);
		return rc;
	}
	if (prev)
		pr_err("state: %s; started from the last good copy %s.prev", err, D.state_path);
	set_aside_bad_state(prev);
	/*
	 * A state file with services is what this host served (a restart): loaded.
	 * Not an empty one: every start writes the state back, so its existence
	 * says nothing, and a host that served nothing has nothing to keep.
	 */
	if (st->nsvc)
		chlbd_ready_loaded(CHLBD_LOADED_STATE);
	return 0;
}

/* STATE.lock, in a directory the state may be kept in (chlb_state_dir_open()), made if missing */
int chlbd_state_lock(void)
{
	char err[CHLB_ERR_MAX + 128];
	int fd = mkdir_parent(D.state_path);

	if (fd) {
		pr_err("couldn't create the directory of '%s': %s", D.state_path,
		       chlb_strerror(fd));
		return fd;
	}
	fd = chlb_state_dir_open(D.state_path, err, sizeof(err));

	if (fd < 0) {
		pr_err("state: %s; refusing to start", err);
		return fd;
	}
	close(fd);
	fd = lock_beside(D.state_path, "state file");
	return fd < 0 && fd != -EROFS ? fd : 0; /* -EROFS: not locked, carry on */
}
