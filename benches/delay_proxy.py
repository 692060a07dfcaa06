"""A TCP proxy that holds every byte a fixed time in each direction: Redis on the far side
of a network, for benches/shared.sh (RTT_MS). Order is kept; a connection's two directions
are independent, so pipelined requests overlap as on a real link.

    python3 benches/delay_proxy.py UPSTREAM_PORT LISTEN_PORT ONE_WAY_SECONDS
"""
import asyncio
import sys


async def pipe(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    while True:
        data = await reader.read(65536)
        await queue.put((loop.time() + delay, data))
        if not data:
            break
    await sender


async def main(upstream, listen, delay):
    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            # The server is down: the client sees its connection closed, as it would.
            client_writer.close()
            return
        await asyncio.gather(
            pipe(client_reader, server_writer, delay),
            pipe(server_reader, client_writer, delay),
            return_exceptions=True,
        )

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])))
