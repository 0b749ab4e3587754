// Calls in flight, for the exit handlers (flight.c): what calls.c notes around every call it makes
// into a runtime plugin.
#ifndef REPLAYCHECK_PLUGIN_FLIGHT_H
#define REPLAYCHECK_PLUGIN_FLIGHT_H

#include "rcp.h"

// rcp_in notes a call into the runtime r in flight, until rcp_out of what it returns.
typedef struct {
	const char *was; // rcp_here before the call: a call made inside another's restores it
	int k;           // its entry in rcp_flight, -1 when counted in rcp_flight_more
} rcp_note;

rcp_note rcp_in(const rc_runtime *r);
void rcp_out(rcp_note n);

#endif
