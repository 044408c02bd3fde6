/*
 * onesock: the smallest program that uses a socket the way goxio cares
 * about: create one AF_INET UDP socket, bind it to 127.0.0.1:0, send one
 * datagram to itself (the first data call: the library loads its engine),
 * close it, exit. Used to measure start-up time and RSS added by the library
 * in a process that loads the engine.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("bind");
		return 1;
	}
	socklen_t len = sizeof(sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 ||
	    sendto(fd, "x", 1, 0, (struct sockaddr *)&sa, sizeof(sa)) != 1) {
		perror("sendto");
		return 1;
	}
	if (close(fd) != 0) {
		perror("close");
		return 1;
	}
	return 0;
}
