/** Types of kafkaBroker.cjs (plain CommonJS, so the test run's file locks can use it before TypeScript loads). */
export declare const KAFKA_BROKERS: string[];
export declare function brokerAnswers(broker: string, timeoutMs?: number): Promise<boolean>;
export declare function kafkaAnswers(): Promise<boolean>;
