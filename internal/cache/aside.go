package cache

// Aside is the cache-aside pattern every kind of entry uses: get looks the
// entry up and reports a damaged one as a miss (dropping it only when
// locked is true: another build may be replacing it meanwhile); on a miss,
// make builds and stores it under the key's lock, after looking once more,
// since another build may have made it while this one waited. A build
// killed half-way leaves no entry, only an unlocked lock file.
func Aside[T any](c *Cache, lock string, get func(locked bool) (T, bool), make func() (T, error)) (T, error) {
	if v, ok := get(false); ok {
		return v, nil
	}
	unlock, err := c.Lock(lock)
	if err != nil {
		var zero T
		return zero, err
	}
	defer unlock()
	if v, ok := get(true); ok {
		return v, nil
	}
	return make()
}
