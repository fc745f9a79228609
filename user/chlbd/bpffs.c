// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A bpffs under the pin directory. Hosts without systemd (containers,
 * minimal VMs) have no bpffs at /sys/fs/bpf, and pinning there fails
 * (/sys/fs/bpf is then a plain sysfs directory). Where to mount one:
 *   - pin dir below /sys/fs/bpf (the default /sys/fs/bpf/chlb): on
 *     /sys/fs/bpf itself, as Cilium does for its bpf root and systemd does
 *     at boot. It is where bpftool, ip and tc look, so the pins stay
 *     visible to the usual tools.
 *   - elsewhere: on the pin dir's parent. bpftool mounts on the directory
 *     that will hold its pins; the parent plays that role here and keeps
 *     the pin dir an ordinary directory inside the bpffs, which
 *     `shutdown --detach` can remove. A non-empty parent is refused: the
 *     mount would hide what is in it (a state file, say).
 * Mode 0700 as systemd and bpftool mount it. Propagation is left as the
 * parent mount has it (Cilium does the same): on a shared /sys the mount
 * reaches the host's other mount namespaces, which is what pins meant to
 * outlive chlbd need. chlbd --netns joins only the network namespace, so
 * this runs in the host's mount namespace; under `ip netns exec` (a private
 * mount namespace) the bpffs, and every pin in it, would die with that
 * namespace: that case is logged as a warning.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "chlbd.h"
#include "base/util.h"

#define BPFFS_ROOT "/sys/fs/bpf"

static bool path_on_bpffs(const char *path)
{
	struct statfs sf;

	return !statfs(path, &sf) && sf.f_type == BPF_FS_MAGIC;
}

/* The pin dir, or its nearest ancestor that exists, is on a bpffs. */
static bool pin_dir_on_bpffs(const char *dir)
{
	char buf[PATH_MAX], *slash;

	snprintf(buf, sizeof(buf), "%s", dir);
	for (;;) {
		if (!access(buf, F_OK))
			return path_on_bpffs(buf);
		slash = strrchr(buf, '/');
		if (!slash || slash == buf)
			return path_on_bpffs("/");
		*slash = '\0';
	}
}

/* Where a bpffs for `dir` (absolute, no trailing '/') goes; see the top comment. */
static int mount_point(const char *dir, char *out, size_t len)
{
	size_t n = strlen(BPFFS_ROOT);
	const char *slash;

	if (!strncmp(dir, BPFFS_ROOT, n) && (dir[n] == '/' || !dir[n])) {
		snprintf(out, len, "%s", BPFFS_ROOT);
		return 0;
	}
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return -EINVAL; /* /DIR: the parent would be / */
	snprintf(out, len, "%.*s", (int)(slash - dir), dir);
	return 0;
}

static int dir_empty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			rc = -ENOTEMPTY;
			break;
		}
	closedir(d);
	return rc;
}

/* pid's parent, from /proc/PID/stat (the field after the state, after comm's ')'); 0: unknown */
static pid_t parent_of(pid_t pid)
{
	char path[32], buf[512], *p;
	int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f) || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %d", &ppid) != 1)
		ppid = 0;
	fclose(f);
	return ppid;
}

static bool same_ns(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev;
}

/*
 * Same mount namespace as pid 1 (the host's, or the container's own)? Where
 * pid 1's is not readable (some sandboxes deny it even to root), an
 * ancestor in another mount namespace tells: `ip netns exec` runs chlbd in
 * a namespace of its own under the shell's, and without this no warning
 * came, and a SIGTERM later took the program off the interface.
 */
static bool host_mount_ns(void)
{
	struct stat self, other;
	char path[40];

	if (stat("/proc/self/ns/mnt", &self))
		return true; /* can't tell: don't cry wolf */
	if (!stat("/proc/1/ns/mnt", &other))
		return same_ns(&self, &other);
	for (pid_t p = getppid(); p > 1; p = parent_of(p)) {
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)p);
		if (stat(path, &other))
			return true;
		if (!same_ns(&self, &other))
			return false;
	}
	return true;
}

/*
 * Under an exclusive flock on the mount point's directory: two chlbds (or a
 * test script, tests/lib.sh) starting together on a fresh host would
 * otherwise both see no bpffs and stack two mounts, the second hiding the
 * first one's pins.
 */
static int mount_locked(const char *mnt, const char *pin_dir)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0 || flock(fd, LOCK_EX)) {
		rc = -errno;
		pr_err("bpffs: couldn't lock '%s': %s", mnt, chlb_strerror(rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (path_on_bpffs(mnt))
		goto out; /* mounted by whoever held the lock before us */
	rc = dir_empty(mnt);
	if (rc) {
		pr_err("bpffs: '%s' is not on a bpffs and is not empty (%d): a bpffs mounted "
		       "there would hide its contents; mount one yourself (mount -t bpf bpf DIR) "
		       "or choose another --pin-dir",
		       mnt, rc);
		goto out;
	}
	if (mount("bpf", mnt, "bpf", 0, "mode=0700")) {
		rc = -errno;
		pr_err("bpffs: couldn't mount a bpffs on '%s': %s", mnt, chlb_strerror(rc));
		goto out;
	}
	pr_info("bpffs: none was mounted for pin directory %s: mounted one on %s", pin_dir, mnt);
	if (!host_mount_ns())
		pr_warn("bpffs: this is a private mount namespace: the bpffs on %s, and the pins "
			"in it, go when the namespace goes (use --netns instead of "
			"`ip netns exec`)",
			mnt);
out:
	close(fd); /* also drops the lock */
	return rc;
}

int chlbd_bpffs_ensure(const char *pin_dir)
{
	char mnt[PATH_MAX];
	int rc;

	if (pin_dir_on_bpffs(pin_dir))
		return 0;
	rc = mount_point(pin_dir, mnt, sizeof(mnt));
	if (rc) {
		pr_err("bpffs: pin directory '%s' is not on a bpffs, and its parent is /", pin_dir);
		return rc;
	}
	rc = chlb_mkdir_p(mnt, 0755, 0755);
	if (rc) {
		pr_err("bpffs: couldn't create '%s': %s", mnt, chlb_strerror(rc));
		return rc;
	}
	return mount_locked(mnt, pin_dir);
}
