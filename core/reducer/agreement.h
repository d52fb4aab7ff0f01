// Before any bytes move, the ranks of a world agree on what they are about to do (the case
// id, the arena length, the contract). A rank that disagrees would post other sizes, and a
// size mismatch aborts Gloo's receiver or hangs NCCL; so a small fixed-size record of the
// text is all-gathered first (fixed size: it cannot mismatch itself) and compared.
#pragma once

#include <string>

#include "core/transport/transport.h"

namespace rv {

// Collective. Returns when every rank passed the same `what`; otherwise throws InputError on
// every rank (they all see the same records, so they all throw the same message) naming who
// has what, e.g. "ranks disagree before moving any bytes: ranks 0, 1 have
// contract=...,n=1000 but rank 2 has contract=...,n=999". A record that arrives corrupted
// (AgreementRecord::intact) is a RuntimeFailure naming its rank: the transport changed it.
// Transport failures propagate (RuntimeFailure, DeadlineExceeded naming the peer).
void agree_across_ranks(Transport& transport, const std::string& what);

}  // namespace rv
