// libstdcxx_buckets.cpp -- print the bucket counts a libstdc++ std::unordered_map goes
// through when it grows one insert at a time (the table bbpe/xbbpe/map_order_buckets.txt).
//
//   g++ -std=c++17 -O2 -o /tmp/libstdcxx_buckets tools/libstdcxx_buckets.cpp
//   /tmp/libstdcxx_buckets > bbpe/xbbpe/map_order_buckets.txt
//
// The first part inserts into a real std::unordered_map and records bucket_count() after
// every insert, up to REAL_LIMIT elements. Past that, inserting for real would need
// gigabytes, so the sequence is continued with the very policy object the container
// consults on each insert (std::__detail::_Prime_rehash_policy, compiled into
// libstdc++.so), called exactly as _Hashtable::_M_insert_unique_node calls it. The two
// parts are cross-checked over the real range. XBBPE inserts keys one at a time (emplace)
// and never calls reserve/rehash, so this sequence is all an emulation needs.
#include <cstdio>
#include <cstdint>
#include <unordered_map>
#include <vector>

int main()
{
    const std::size_t REAL_LIMIT = std::size_t(1) << 22;
    std::vector<std::size_t> real;
    {
        std::unordered_map<std::uint64_t, char> m;
        std::size_t last = m.bucket_count();
        real.push_back(last);
        for (std::uint64_t i = 0; i < REAL_LIMIT; i++) {
            m.emplace(i, 0);
            if (m.bucket_count() != last) {
                last = m.bucket_count();
                real.push_back(last);
            }
        }
    }
    std::vector<std::size_t> seq;
    std::__detail::_Prime_rehash_policy policy;  // max_load_factor 1.0, as in the container
    std::size_t buckets = 1, elements = 0;
    seq.push_back(buckets);
    const std::size_t LIMIT = std::size_t(1) << 40;
    while (elements < LIMIT) {
        auto r = policy._M_need_rehash(buckets, elements, 1);
        if (r.first) {
            buckets = r.second;
            seq.push_back(buckets);
            if (elements + 1 > buckets)  // never happens with load factor 1.0; guard anyway
                return 2;
            // no rehash is needed again before element number `buckets + 1`
            elements = buckets;
            continue;
        }
        elements++;
    }
    for (std::size_t i = 0; i < real.size(); i++)
        if (i >= seq.size() || seq[i] != real[i]) {
            std::fprintf(stderr, "mismatch at step %zu\n", i);
            return 1;
        }
    std::printf("# bucket_count() of a libstdc++ std::unordered_map that grows by single inserts\n");
    std::printf("# (max_load_factor 1.0): it moves to the next value when element bucket_count+1 is\n");
    std::printf("# inserted. Made by tools/libstdcxx_buckets.cpp (g++ 12.2, Debian 12, x86-64):\n");
    std::printf("#   g++ -std=c++17 -O2 -o /tmp/libstdcxx_buckets tools/libstdcxx_buckets.cpp\n");
    std::printf("#   /tmp/libstdcxx_buckets > bbpe/xbbpe/map_order_buckets.txt\n");
    std::printf("# The first %zu values were read from a real map (%zu inserts).\n", real.size(), REAL_LIMIT);
    for (std::size_t b : seq)
        std::printf("%zu\n", b);
    return 0;
}
