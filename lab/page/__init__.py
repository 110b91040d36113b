"""The lab's live page: the watch caches, the requests as they happen, and charts."""
