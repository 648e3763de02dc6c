package tempfile

// openNoFollow: Windows has neither flag; NewLock's check is what there
// is.
const openNoFollow = 0
