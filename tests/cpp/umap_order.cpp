// umap_order.cpp -- iteration order of a real libstdc++ std::unordered_map with the blog's
// key type and hash (tests/test_umap.py compares bbpe._umap with it).
// stdin: PREFILL, then hex keys. The map first gets PREFILL other keys and is clear()-ed
// (0: a fresh map), then the keys are emplaced in order. stdout: their indexes, one per
// line, in iteration order.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <unordered_map>

struct Key {
    uint8_t idKey[24] = {0};
    size_t len = 0;
    bool operator==(const Key& o) const { return len == o.len && memcmp(idKey, o.idKey, sizeof(idKey)) == 0; }
};

struct BlogHash {  // std::hash<WordIdKey> from the blog
    size_t operator()(const Key& k) const noexcept {
        size_t h = 0;
        for (size_t i = 0; i < k.len; ++i)
            h ^= std::hash<uint8_t>{}(k.idKey[i]) + 0x9e3779b9 + (h << 6) + (h >> 2);
        return h;
    }
};

int main() {
    size_t prefill = 0;
    std::cin >> prefill;
    std::unordered_map<Key, int64_t, BlogHash> m;
    for (size_t i = 0; i < prefill; i++) {
        Key k;
        memcpy(k.idKey, &i, sizeof(i));
        k.len = 9;
        m.emplace(k, -1);
    }
    m.clear();
    std::string hex;
    int64_t index = 0;
    while (std::cin >> hex) {
        Key k;
        k.len = hex.size() / 2;
        for (size_t i = 0; i < k.len; i++) k.idKey[i] = (uint8_t)std::stoi(hex.substr(2 * i, 2), nullptr, 16);
        m.emplace(k, index++);
    }
    for (auto& kv : m) printf("%lld\n", (long long)kv.second);
    return 0;
}
