/* tls_go.h - Go's crypto/tls uprobes: Go programs among the processes in scope, probed at
 * crypto/tls.(*Conn).Read/Write's entry and ret instructions (tls_go.c). */
#ifndef GG_L7_TLS_GO_H
#define GG_L7_TLS_GO_H

struct l7probe;
struct l7_gotls;

struct l7_gotls *l7_gotls__new(struct l7probe *skel);
void l7_gotls__free(struct l7_gotls *g);
/* Detach everything. */
void l7_gotls__clear(struct l7_gotls *g);
/* Mark every probed program unseen, probe pid's executable if it is a Go program not probed yet
 * (for pid only when per_pid), then l7_gotls__end_scan drops what no scanned process runs any more. */
void l7_gotls__begin_scan(struct l7_gotls *g);
void l7_gotls__scan_pid(struct l7_gotls *g, int pid, int per_pid);
/* Returns the number of Go programs probed. */
int l7_gotls__end_scan(struct l7_gotls *g);

#endif
