"""zmq.asyncio sockets that can be used from more than one thread's event loop.

jupyter_client 7's BlockingKernelClient runs each call on the calling
thread's own asyncio loop, and pyzmq registers a socket's fd in every loop
it is used in but removes it, at close, only from the last one. A client
used from the main thread and then from a worker thread leaves its fd
registered in the main thread's loop after it is closed; the next socket
that gets the same fd number is then never watched there (asyncio's
add_reader on a known fd with the same events only swaps the callback, no
epoll_ctl), and its messages are seen only when a poll times out."""
import zmq.asyncio


class Socket(zmq.asyncio.Socket):
    """A zmq.asyncio socket that forgets its fd in every loop it was
    registered in when it is closed."""

    #: the loops its fd was registered in
    _loops: tuple = ()

    def _init_io_state(self, io_loop=None):
        super()._init_io_state(io_loop)
        loop = io_loop if io_loop is not None else self._current_loop
        if loop is not None and loop not in self._loops:
            self._loops = self._loops + (loop,)

    def _clear_io_state(self):
        for loop in self._loops:
            if loop is not self._current_loop and not loop.is_closed() and self._fd != -1:
                self._get_selector(loop).remove_reader(self._fd)
        super()._clear_io_state()


class Context(zmq.asyncio.Context):
    """A zmq.asyncio context whose sockets are loopsafe.Socket."""

    _socket_class = Socket
    _instance = None
