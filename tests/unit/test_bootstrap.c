/* test_bootstrap.c - the bootstrap's frames and configuration without a
 * job: the frame parser against every truncation and random corruption;
 * configuration from the variables of mpirun, Slurm and torchrun (and
 * MK_ROOT / MK_IFACE: listeners bound to the root's address, never every
 * interface by default).  The job across real processes is
 * test_bootstrap_join.c.  Exit 0 = pass.
 */
#include "bootstrap_frames.h"


static void test_parser(void)
{
	unsigned char buf[4096], cp[4096];
	char err[256];
	bootstrap_msg m;
	size_t n;
	int all_short = 1, ok_ct = 0;

	n = hello(buf, 1, 4);
	{
		mk_status st = bootstrap_parse(buf, n, 4, &m, err, sizeof err);
		mkt_check(st == MK_OK && m.type == BOOTSTRAP_HELLO && m.world == 4 &&
			  m.addr.port == 1234 && m.nonce == buf + n - 48 && m.mac == buf + n - 32,
			  "a HELLO parses: world %u port %u, nonce and MAC at the end", m.world,
			  m.addr.port);
	}
	for (size_t k = 0; k < n; k++)
		if (bootstrap_parse(buf, k, 4, &m, err, sizeof err) == MK_OK ||
		    m.fault != BOOTSTRAP_FAULT_SHORT)
			all_short = 0;
	mkt_check(all_short, "every truncation of a HELLO is refused as short (%zu cases)", n);
	memcpy(cp, buf, n);
	cp[n] = 0;
	mkt_check(bootstrap_parse(cp, n + 1, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_EXTRA, "a byte too many: %s", err);
	{
		/* the handshake's frames, exactly their size */
		unsigned char nb[BOOTSTRAP_HDR + 64], pb[64];
		memset(nb, 7, sizeof nb);
		memset(pb, 7, sizeof pb);
		mkt_check(bootstrap_parse(nb, frame(nb, BOOTSTRAP_CHALLENGE, 0, 0, pb, 16), 4, &m,
					  err, sizeof err) == MK_OK && m.nonce == nb + BOOTSTRAP_HDR,
			  "a CHALLENGE parses");
		mkt_check(bootstrap_parse(nb, frame(nb, BOOTSTRAP_CHALLENGE, 0, 0, pb, 15), 4, &m,
					  err, sizeof err) != MK_OK && m.fault == BOOTSTRAP_FAULT_LENGTH,
			  "a CHALLENGE of 15 bytes: %s", err);
		mkt_check(bootstrap_parse(nb, frame(nb, BOOTSTRAP_ACCEPT, 0, 0, pb, 32), 4, &m,
					  err, sizeof err) == MK_OK && m.mac == nb + BOOTSTRAP_HDR,
			  "an ACCEPT parses");
		mkt_check(bootstrap_parse(nb, frame(nb, BOOTSTRAP_PEER_HELLO, 1, 0, pb, 48), 4, &m,
					  err, sizeof err) == MK_OK && m.nonce && m.mac,
			  "a PEER_HELLO parses");
		mkt_check(bootstrap_parse(nb, frame(nb, BOOTSTRAP_PEER_HELLO, 1, 0, pb, 0), 4, &m,
					  err, sizeof err) != MK_OK, "a PEER_HELLO without nonce and "
			  "MAC: %s", err);
	}
	{
		/* the MAC covers key, label, acceptor, nonce, bytes */
		unsigned char k2[BOOTSTRAP_KEY], na[BOOTSTRAP_NONCE] = {1}, m1[32], m2[32];
		int differ = 1;
		memcpy(k2, KEY, sizeof k2);
		bootstrap_mac(KEY, "mk hello", 0, na, buf, n, m1);
		k2[31] ^= 1;
		bootstrap_mac(k2, "mk hello", 0, na, buf, n, m2);
		differ &= !!memcmp(m1, m2, 32);
		bootstrap_mac(KEY, "mk hellp", 0, na, buf, n, m2);
		differ &= !!memcmp(m1, m2, 32);
		bootstrap_mac(KEY, "mk hello", 1, na, buf, n, m2);
		differ &= !!memcmp(m1, m2, 32);
		na[15] = 1;
		bootstrap_mac(KEY, "mk hello", 0, na, buf, n, m2);
		differ &= !!memcmp(m1, m2, 32);
		mkt_check(differ, "the MAC changes with the key, label, acceptor and nonce");
	}
	memcpy(cp, buf, n);
	cp[0] ^= 1;
	mkt_check(bootstrap_parse(cp, n, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_MAGIC, "bad magic: %s", err);
	memcpy(cp, buf, n);
	cp[4] = 9;
	mkt_check(bootstrap_parse(cp, n, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_VERSION, "bad version: %s", err);
	memcpy(cp, buf, n);
	cp[6] = 0;
	mkt_check(bootstrap_parse(cp, n, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_TYPE, "type 0: %s", err);
	cp[6] = BOOTSTRAP_TYPE_END;
	mkt_check(bootstrap_parse(cp, n, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_TYPE, "type past the end: %s", err);
	memcpy(cp, buf, n);
	cp[20] = 1;
	mkt_check(bootstrap_parse(cp, n, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_FIELD, "reserved bits: %s", err);
	n = hello(buf, 4, 4);
	mkt_check(bootstrap_parse(buf, n, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_FIELD, "rank 4 of 4: %s", err);
	n = hello(buf, 0, 4);
	mkt_check(bootstrap_parse(buf, n, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_FIELD, "HELLO from rank 0: %s", err);
	n = hello(buf, 3, 2);
	mkt_check(bootstrap_parse(buf, n, 0, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_FIELD, "HELLO rank 3 of a world of 2: %s", err);
	n = hello(buf, 1, 4);
	buf[BOOTSTRAP_HDR + 4 + 8] = 5;   /* family */
	mkt_check(bootstrap_parse(buf, n, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_FIELD, "HELLO with address family 5: %s", err);
	n = hello(buf, 1, 4);
	memset(buf + BOOTSTRAP_HDR + 4 + 32, 'x', BOOTSTRAP_HOSTNAME);
	mkt_check(bootstrap_parse(buf, n, 4, &m, err, sizeof err) != MK_OK,
		  "HELLO with an unterminated host name: %s", err);

	bootstrap_header(buf, BOOTSTRAP_P2P, 1, 0, BOOTSTRAP_MAX_PAYLOAD + 1);
	mkt_check(bootstrap_parse_header(buf, BOOTSTRAP_HDR, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_LENGTH, "oversized length in the header: %s", err);
	bootstrap_header(buf, BOOTSTRAP_P2P, 1, 0, 0xffffffffu);
	mkt_check(bootstrap_parse_header(buf, BOOTSTRAP_HDR, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_LENGTH, "length 0xffffffff: %s", err);
	bootstrap_header(buf, BOOTSTRAP_HELLO, 1, 0, 5000);
	mkt_check(bootstrap_parse_header(buf, BOOTSTRAP_HDR, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_LENGTH, "HELLO claiming 5000 bytes: %s", err);
	bootstrap_header(buf, BOOTSTRAP_WELCOME, 0, 0, BOOTSTRAP_WELCOME_WIRE(4) + 1);
	mkt_check(bootstrap_parse_header(buf, BOOTSTRAP_HDR, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_LENGTH, "WELCOME too long for the world: %s", err);
	bootstrap_header(buf, BOOTSTRAP_BYE, 1, 0, 1);
	mkt_check(bootstrap_parse_header(buf, BOOTSTRAP_HDR, 4, &m, err, sizeof err) != MK_OK &&
		  m.fault == BOOTSTRAP_FAULT_LENGTH, "BYE with a payload: %s", err);
	{
		unsigned char pay[8] = {7, 0, 0, 0, 'h', 'i', 1, 'x'};
		n = frame(buf, BOOTSTRAP_ABORT, 0, 0, pay, sizeof pay);
		mkt_check(bootstrap_parse(buf, n, 4, &m, err, sizeof err) != MK_OK &&
			  m.fault == BOOTSTRAP_FAULT_FIELD, "ABORT about rank 7 of 4: %s", err);
		pay[0] = 2;
		n = frame(buf, BOOTSTRAP_ABORT, 0, 0, pay, 8);
		mkt_check(bootstrap_parse(buf, n, 4, &m, err, sizeof err) == MK_OK,
			  "ABORT about rank 2 parses");
		mkt_check(m.about == 2 && !strcmp(m.text, "hi?x"),
			  "ABORT text is made printable: '%s'", m.text);
	}
	/* random corruption: never a crash, every refusal has a fault */
	{
		unsigned seed = 12345;
		int bad_fault = 0;
		for (int it = 0; it < 20000; it++) {
			size_t len = hello(buf, 1 + it % 3, 4);
			int flips = 1 + it % 4;
			for (int f = 0; f < flips; f++) {
				seed = seed * 1103515245u + 12345u;
				buf[(seed >> 8) % len] ^= (unsigned char)(1u << ((seed >> 4) & 7));
			}
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 16) % 5 == 0)
				len = (seed >> 3) % (len + 1);
			if (bootstrap_parse(buf, len, 4, &m, err, sizeof err) == MK_OK)
				ok_ct++;
			else if (m.fault == BOOTSTRAP_FAULT_NONE)
				bad_fault++;
		}
		mkt_check(!bad_fault, "20000 corrupted frames: %d still valid, every refusal "
			  "says why", ok_ct);
	}
}

/* ---- configuration ------------------------------------------------------------ */
static const char *tab_get(const char *name, void *ctx)
{
	const char *const *t = ctx;
	for (; t[0]; t += 2)
		if (!strcmp(t[0], name))
			return t[1];
	return NULL;
}

static mk_status conf(const char *const *t, bootstrap_cfg *c, char *err)
{
	return bootstrap_config(c, tab_get, (void *)t, err, 256);
}

static void test_config(void)
{
	bootstrap_cfg c, d;
	char err[256];
	{
		const char *t[] = {"MK_RANK", "3", "MK_WORLD_SIZE", "8", "MK_ROOT", "node1:5000",
				   "MK_JOB_TOKEN", "secret", "MK_HOST_ID", "a", NULL};
		mk_status st = conf(t, &c, err);
		bootstrap_cfg k;
		memset(&k, 0, sizeof k);
		bootstrap_set_token(&k, "secret");
		mkt_check(st == MK_OK && c.rank == 3 && c.world == 8 &&
			  !strcmp(c.root_host, "node1") && c.root_port == 5000 &&
			  !memcmp(c.key, k.key, BOOTSTRAP_KEY) && !c.token_derived &&
			  c.host_id == bootstrap_hash("a") && c.root_fd == -1 && !c.iface[0],
			  "MK_* variables: %s", c.source);
	}
	{
		const char *t[] = {"OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4",
				   "OMPI_COMM_WORLD_LOCAL_RANK", "1", "OMPI_COMM_WORLD_LOCAL_SIZE",
				   "2", "MK_ROOT", "[::1]:7000", "OMPI_MCA_ess_base_jobid", "77",
				   NULL};
		const char *u[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4",
				   "MK_ROOT", "[::1]:7000", "OMPI_MCA_ess_base_jobid", "77", NULL};
		const char *v[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "4",
				   "MK_ROOT", "[::1]:7000", "OMPI_MCA_ess_base_jobid", "78", NULL};
		mk_status s = conf(t, &c, err);
		mkt_check(s == MK_OK && c.rank == 1 && c.world == 4 && c.local_rank == 1 &&
			  c.local_world == 2 && !strcmp(c.root_host, "::1") && c.root_port == 7000,
			  "Open MPI variables, IPv6 root: %s", s ? err : c.source);
		conf(u, &d, err);
		mkt_check(!memcmp(c.key, d.key, BOOTSTRAP_KEY) && c.token_derived &&
			  strstr(c.source, "guessable"), "ranks of one job derive one key, said to "
			  "be guessable: %s", c.source);
		conf(v, &d, err);
		mkt_check(memcmp(c.key, d.key, BOOTSTRAP_KEY) != 0, "another job id, another key");
	}
	{
		const char *t[] = {"PMI_RANK", "2", "PMI_SIZE", "3", "MK_ROOT", "h:1", NULL};
		mkt_check(conf(t, &c, err) == MK_OK && c.rank == 2 && c.world == 3, "PMI variables");
	}
	{
		const char *t[] = {"SLURM_PROCID", "5", "SLURM_NTASKS", "16", "SLURM_LOCALID", "1",
				   "SLURM_JOB_ID", "99", "SLURM_STEP_ID", "0", "MK_ROOT", "h:2",
				   NULL};
		mk_status st = conf(t, &c, err);
		mkt_check(st == MK_OK && c.rank == 5 && c.world == 16 &&
			  c.local_rank == 1 && strstr(c.source, "Slurm") &&
			  strstr(c.source, "SLURM_JOB_ID"), "Slurm variables: %s", c.source);
	}
	{
		const char *t[] = {"RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1",
				   "LOCAL_WORLD_SIZE", "2", "MASTER_ADDR", "10.0.0.1",
				   "MASTER_PORT", "29500", "TORCHELASTIC_RUN_ID", "x", NULL};
		mk_status st = conf(t, &c, err);
		mkt_check(st == MK_OK && c.rank == 1 && c.world == 2 &&
			  !strcmp(c.root_host, "10.0.0.1") && c.root_port == 29501 &&
			  c.local_world == 2, "torchrun variables: root %s:%d", c.root_host,
			  c.root_port);
	}
	{
		const char *t[] = {"MK_RANK", "0", "MK_WORLD_SIZE", "2", "RANK", "1", "WORLD_SIZE",
				   "2", "MK_ROOT", "h:3", NULL};
		mkt_check(conf(t, &c, err) == MK_OK && c.rank == 0, "MK_RANK wins over RANK");
	}
	{
		const char *t[] = {NULL};
		static const unsigned char zero[BOOTSTRAP_KEY];
		mkt_check(conf(t, &c, err) == MK_OK && c.rank == 0 && c.world == 1 &&
			  memcmp(c.key, zero, BOOTSTRAP_KEY) != 0, "no variables: rank 0 of 1");
	}
	{
		/* MK_ROOT_FD: a listening socket of this process, for rank 0 only */
		int lp, l = mkt_listen(&lp), f = dup(2);
		char ls[16], fs[16];
		snprintf(ls, sizeof ls, "%d", l);
		snprintf(fs, sizeof fs, "%d", f);
		{
			const char *t[] = {"MK_RANK", "0", "MK_WORLD_SIZE", "2", "MK_ROOT", "h:1",
					   "MK_ROOT_FD", ls, "MK_IFACE", "lo", NULL};
			mkt_check(conf(t, &c, err) == MK_OK && c.root_fd == l && !strcmp(c.iface, "lo"),
				  "MK_ROOT_FD=%s (listening) and MK_IFACE=lo taken", ls);
		}
		{
			const char *t[] = {"MK_RANK", "0", "MK_WORLD_SIZE", "2", "MK_ROOT", "h:1",
					   "MK_ROOT_FD", fs, NULL};
			mkt_check(conf(t, &c, err) == MK_ERR_INVALID && strstr(err, "MK_ROOT_FD"),
				  "MK_ROOT_FD naming a non-socket: %s", err);
		}
		{
			const char *t[] = {"MK_RANK", "1", "MK_WORLD_SIZE", "2", "MK_ROOT", "h:1",
					   "MK_ROOT_FD", ls, NULL};
			mkt_check(conf(t, &c, err) == MK_OK && c.root_fd == -1,
				  "MK_ROOT_FD is rank 0's only");
		}
		close(l);
		close(f);
	}
	{
		const char *t1[] = {"MK_RANK", "1", NULL};
		const char *t2[] = {"MK_RANK", "4", "MK_WORLD_SIZE", "4", "MK_ROOT", "h:1", NULL};
		const char *t3[] = {"MK_RANK", "1", "MK_WORLD_SIZE", "4", NULL};
		const char *t4[] = {"MK_RANK", "1", "MK_WORLD_SIZE", "4", "MK_ROOT", "nohost", NULL};
		const char *t5[] = {"MK_RANK", "x", "MK_WORLD_SIZE", "4", "MK_ROOT", "h:1", NULL};
		const char *t6[] = {"MK_RANK", "1", "MK_WORLD_SIZE", "4", "MK_ROOT", "h:99999", NULL};
		const char *t7[] = {"MK_RANK", "1", "MK_WORLD_SIZE", "4", "MK_ROOT", "h:1",
				    "MK_BOOT_TIMEOUT_MS", "0", NULL};
		const char *const *bad[] = {t1, t2, t3, t4, t5, t6, t7};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			mk_status st;
			err[0] = 0;
			st = conf(bad[i], &c, err);
			mkt_check(st == MK_ERR_INVALID && err[0], "bad configuration %zu refused: %s",
				  i, err);
		}
	}
}

int main(void)
{
	frames_init();
	test_parser();
	test_config();
	return mkt_summary("test_bootstrap");
}
