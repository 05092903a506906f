#pragma once
#include <libpq-fe.h>
// What GuestPassPostgres's PostgresSocketWaiter waits on libpq's sockets with (Swift's Glibc module leaves these out).
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
