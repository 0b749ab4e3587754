package interpose

// CachedIn is Cached with the cache's root given.
var CachedIn = cachedIn
