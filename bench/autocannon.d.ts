// autocannon ships no types; the benchmarks use a small part of its API.
declare module 'autocannon'
