// Package probe holds Sluice's named code probes, in the spirit of FoundationDB's: a
// probe marks an interesting branch of core/ (an error path, a rare state) so that a
// simulator sweep can report which branches it reached and which it never did.
//
// Probes are registered once, at package initialisation, into a fixed table
// (Register returns the probe's index); after that the table is read-only. Counting
// goes to a Set the driver owns and hands to the actors, so worlds simulated in
// parallel never share a counter and core/ needs no locks. A nil *Set counts nothing,
// which is what production runs use: a hit is then one nil check.
package probe
